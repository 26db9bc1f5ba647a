"""`bench proxy`'s latency phase (how it alternates the paths, in both interleavings) and its throughput phase."""

from contextlib import AsyncExitStack
from types import SimpleNamespace
from typing import Any

import psutil
import pytest

from nexus_gateway.bench.proxy import Route, _latency, _throughput

pytestmark = pytest.mark.anyio


class _Recording:
    """A client that records which path each call went to."""

    def __init__(self, label: str, calls: list[str]) -> None:
        self.label, self.calls = label, calls

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> Any:
        self.calls.append(self.label)
        return SimpleNamespace(is_error=False)


def _paths(calls: list[str]) -> list[Route]:
    me = psutil.Process()
    return [Route(label, None, _Recording(label, calls), "echo", me) for label in ("direct", "a", "b")]  # type: ignore[arg-type]


async def test_interleaving_by_rounds_calls_each_path_in_blocks_rotating_the_order():
    calls: list[str] = []
    paths = _paths(calls)
    await _latency(paths, rounds=2, calls=2, warmup=0, interleave="rounds")
    assert calls == ["direct", "direct", "a", "a", "b", "b", "a", "a", "b", "b", "direct", "direct"]
    assert [len(path.samples) for path in paths] == [4, 4, 4]


async def test_interleaving_by_calls_takes_one_call_on_each_path_in_turn():
    calls: list[str] = []
    paths = _paths(calls)
    await _latency(paths, rounds=2, calls=2, warmup=1, interleave="calls")
    warmup, measured = calls[:3], calls[3:]
    assert warmup == ["direct", "a", "b"]
    assert measured == ["direct", "a", "b", "direct", "a", "b", "a", "b", "direct", "a", "b", "direct"]
    assert [len(path.samples) for path in paths] == [4, 4, 4]
    assert all(path.cpu_s >= 0 for path in paths)


async def test_throughput_spreads_each_level_over_rounds_visiting_the_paths_in_turn():
    calls: list[str] = []
    paths = _paths(calls)
    async with AsyncExitStack() as stack:
        await _throughput(stack, paths, levels=[1, 2], calls=4, rounds=2)
    level_1, level_2 = calls[:12], calls[12:]
    assert level_1 == ["direct"] * 2 + ["a"] * 2 + ["b"] * 2 + ["a"] * 2 + ["b"] * 2 + ["direct"] * 2
    assert level_2 == ["direct"] * 2 + ["a"] * 2 + ["b"] * 2 + ["a"] * 2 + ["b"] * 2 + ["direct"] * 2
    for path in paths:
        assert set(path.calls_per_s) == {"1", "2"}
        assert all(rate > 0 for rate in path.calls_per_s.values())
