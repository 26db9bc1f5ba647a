"""Counters for `/metrics` (Prometheus text format), kept in process with no dependencies."""

from __future__ import annotations

import itertools
from bisect import bisect_left
from collections import defaultdict
from dataclasses import dataclass, field

_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


@dataclass
class Metrics:
    calls: defaultdict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    """(server, outcome) -> count; outcome is ok, tool_error, invalid_arguments, unavailable, timeout or error."""
    seconds: defaultdict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0] * (len(_BUCKETS) + 1)))
    """server -> calls by the first bucket bound at or above their latency (the last: above every bound);
    `render` sums them into Prometheus's cumulative buckets."""
    seconds_sum: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    searches: int = 0

    def observe_call(self, server: str, outcome: str, elapsed: float) -> None:
        self.calls[(server, outcome)] += 1
        self.seconds_sum[server] += elapsed
        self.seconds[server][bisect_left(_BUCKETS, elapsed)] += 1

    def render(self, upstream_up: dict[str, bool], tools: int) -> str:
        lines = [
            "# HELP nexus_tools Tools in the catalog.",
            "# TYPE nexus_tools gauge",
            f"nexus_tools {tools}",
            "# HELP nexus_upstream_up Whether the upstream is connected.",
            "# TYPE nexus_upstream_up gauge",
            *(f'nexus_upstream_up{{server="{name}"}} {int(up)}' for name, up in sorted(upstream_up.items())),
            "# HELP nexus_searches_total search_tools calls.",
            "# TYPE nexus_searches_total counter",
            f"nexus_searches_total {self.searches}",
            "# HELP nexus_tool_calls_total Upstream tool calls by outcome.",
            "# TYPE nexus_tool_calls_total counter",
            *(
                f'nexus_tool_calls_total{{server="{server}",outcome="{outcome}"}} {count}'
                for (server, outcome), count in sorted(self.calls.items())
            ),
            "# HELP nexus_tool_call_seconds Upstream tool call latency through the gateway.",
            "# TYPE nexus_tool_call_seconds histogram",
        ]
        for server, buckets in sorted(self.seconds.items()):
            total = sum(count for (name, _), count in self.calls.items() if name == server)
            lines += [
                f'nexus_tool_call_seconds_bucket{{server="{server}",le="{b}"}} {n}'
                for b, n in zip(_BUCKETS, itertools.accumulate(buckets), strict=False)
            ]
            lines += [
                f'nexus_tool_call_seconds_bucket{{server="{server}",le="+Inf"}} {total}',
                f'nexus_tool_call_seconds_sum{{server="{server}"}} {self.seconds_sum[server]:.6f}',
                f'nexus_tool_call_seconds_count{{server="{server}"}} {total}',
            ]
        return "\n".join(lines) + "\n"
