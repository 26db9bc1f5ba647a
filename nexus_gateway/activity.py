"""What the gateway did lately: its last upstream calls and `run` traces, in two bounded ring buffers.

The core records every upstream call (`Gateway.call_upstream`) and every `run` (meta/run.py) here; the
dashboard reads it. Nothing is persisted and nothing grows: the oldest entry goes when a buffer is full.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

KEEP = 200
"""Entries kept in each buffer."""


@dataclass(frozen=True)
class CallEntry:
    at: float
    """Unix time the call ended."""
    tool: str
    server: str
    outcome: str
    """`ok`, `tool_error`, `invalid_arguments`, `unavailable`, `timeout` or `error`."""
    latency_ms: float
    error: str | None


@dataclass(frozen=True)
class RunEntry:
    at: float
    request: str
    status: str
    """What `run` did: `called`, `proposed`, `ambiguous`, `invalid_arguments`."""
    seconds: float
    trace: Mapping[str, Any] = field(default_factory=dict)
    """meta/run.py's trace: route, margin, tool, arguments, grammar, TTFT, ..."""


class Activity:
    """The last `keep` calls and runs, newest first when read."""

    def __init__(self, keep: int = KEEP) -> None:
        self._calls: deque[tuple[float, str, str, str, float, str | None]] = deque(maxlen=keep)
        """As recorded (an entry is built when read: recording is on every proxied call's path)."""
        self._runs: deque[RunEntry] = deque(maxlen=keep)

    def record_call(
        self, tool: str, server: str, outcome: str, seconds: float, error: BaseException | None = None
    ) -> None:
        message = None if error is None else (str(error) or type(error).__name__)
        self._calls.append((time.time(), tool, server, outcome, seconds, message))

    def record_run(self, request: str, result: Any, seconds: float) -> None:
        """`result`: what `run` answered (a `CallToolResult` or its wire form); its structured content holds
        the status and the trace."""
        structured = result.get("structuredContent") if isinstance(result, dict) else result.structured_content
        structured = structured if isinstance(structured, dict) else {}
        trace = structured.get("trace")
        status = str(structured.get("status", "unknown"))
        self._runs.append(
            RunEntry(time.time(), request, status, seconds, dict(trace) if isinstance(trace, dict) else {})
        )

    def calls(self) -> list[CallEntry]:
        return [
            CallEntry(at, tool, server, outcome, round(seconds * 1000, 2), message)
            for at, tool, server, outcome, seconds, message in reversed(self._calls)
        ]

    def runs(self) -> list[RunEntry]:
        return list(reversed(self._runs))
