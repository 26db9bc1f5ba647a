"""The order upstreams start in: the slowest first, by how long each took the last time.

Upstreams starting together share the machine's cores, so the last one healthy is the one whose own start is
longest and began latest. Servers are therefore started longest first (the scheduling rule that minimizes the
makespan): servers never seen before come first (a first `npx` or `uvx` run may be the slowest of all), then
the rest by their last start time, longest first, ties in config order. The first `PRELAUNCH_MAX` of that
order are the ones `_prelaunch.py` starts before the gateway imports; the pool opens upstreams in the same order.

    <state>/starts.json   {"format": 1, "seconds": {"atlassian": 41.2, "time": 3.1, ...}}

Each upstream's time runs from when its connection began to its first tools/list answered; the file is
written once, after every upstream's first start has ended. A missing or damaged file only means config order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from nexus_gateway.runtime.statefile import StateInvalid, load_json, save_json

FILE = "starts.json"
_FORMAT = 1


def _validate(data: Any) -> dict[str, float]:
    if not isinstance(data, dict) or data.get("format") != _FORMAT or not isinstance(data.get("seconds"), dict):
        raise StateInvalid("not a start-times file")
    return {
        str(name): float(seconds)
        for name, seconds in data["seconds"].items()
        if isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds >= 0
    }


def load_start_times(state_dir: Path) -> dict[str, float]:
    """Seconds each server's last first start took (an empty dict when none is known)."""
    return load_json(state_dir / FILE, _validate) or {}


def save_start_times(state_dir: Path, seconds: Mapping[str, float]) -> bool:
    """Record the start times just measured, keeping those of servers not started this time."""
    known = load_start_times(state_dir) | {name: round(value, 2) for name, value in seconds.items()}
    return save_json(state_dir / FILE, {"format": _FORMAT, "seconds": known})  # a warning when it cannot


def slowest_first(names: Iterable[str], seconds: Mapping[str, float]) -> list[str]:
    """`names` in start order: unknown servers first, then the longest last start first; ties keep their order."""
    ordered = list(names)
    position = {name: index for index, name in enumerate(ordered)}
    return sorted(ordered, key=lambda name: (-seconds.get(name, math.inf), position[name]))
