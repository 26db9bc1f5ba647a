"""The margin gate: route automatically when the best tool clearly beats the second.

`margin = score(top-1) - score(top-2)` on the fused score. At `margin >= tau` the router decides
alone; below it, candidates are re-ranked or handed back to the host. `tau` is calibrated on a
labelled set as the smallest margin whose automatic decisions reach a target precision.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, get_args

from nexus_gateway.errors import ConfigError
from nexus_gateway.runtime.statefile import StateInvalid, save_json


@dataclass(frozen=True)
class Calibration:
    tau: float
    target_precision: float
    precision: float
    """Precision of automatic decisions at `tau` on the calibration set."""
    coverage: float
    """Share of the calibration cases decided automatically at `tau`."""
    n_cases: int
    embedder: str
    size: int
    """Candidate-set size the margins were measured at."""
    fusion: str = "linear"

    def save(self, path: Path) -> bool:
        """Write atomically; False (and a warning) when it cannot be written (`statefile.save_json`)."""
        return save_json(path, asdict(self))

    @classmethod
    def load(cls, path: Path) -> Calibration:
        """A calibration file a person named (the shipped one, `--out`): a bad one is a `ConfigError`."""
        try:
            return cls.from_json(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError) as exc:
            raise ConfigError(f"{path}: not a routing calibration ({exc})") from None

    @classmethod
    def from_json(cls, value: Any) -> Calibration:
        """Validate parsed JSON; raises `StateInvalid` naming the first bad field."""
        if not isinstance(value, dict):
            raise StateInvalid(f"expected an object, got {type(value).__name__}")
        known = {item.name for item in fields(cls)}
        if unknown := sorted(value.keys() - known):
            raise StateInvalid(f"unknown fields {unknown}")
        tau = _number(value, "tau")
        if math.isnan(tau) or tau < 0:
            raise StateInvalid(f"tau must be a margin >= 0 (or Infinity), got {tau}")
        for key in ("target_precision", "precision", "coverage"):
            if not 0.0 <= _number(value, key) <= 1.0:
                raise StateInvalid(f"{key} must be between 0 and 1")
        for key in ("n_cases", "size"):
            if not isinstance(value.get(key), int) or isinstance(value[key], bool) or value[key] < 0:
                raise StateInvalid(f"{key} must be a count")
        if not isinstance(value.get("embedder"), str):
            raise StateInvalid("embedder must be a string")
        from nexus_gateway.routing.fusion import FusionMethod  # fusion loads numpy; the gate is imported without

        if value.get("fusion", "linear") not in get_args(FusionMethod):
            raise StateInvalid(f"fusion must be one of {list(get_args(FusionMethod))}")
        return cls(**value)


def _number(value: dict[str, Any], key: str) -> float:
    number = value.get(key)
    if not isinstance(number, int | float) or isinstance(number, bool):
        raise StateInvalid(f"{key} must be a number, got {number!r}")
    return float(number)


def calibrate_tau(
    margins: Sequence[float], correct: Sequence[bool], target_precision: float
) -> tuple[float, float, float]:
    """(tau, precision, coverage): the smallest threshold whose decisions above it reach the target precision.

    Cases are sorted by margin, largest first; the threshold is placed where the running precision of the
    decided prefix last meets the target, so coverage is as large as the target allows. If no prefix meets
    it, tau is infinite (never decide alone).
    """
    if not margins:
        return math.inf, 0.0, 0.0
    order = sorted(range(len(margins)), key=lambda i: -margins[i])
    hits = 0
    best: tuple[float, float, float] = (math.inf, 0.0, 0.0)
    for rank, i in enumerate(order, start=1):
        hits += bool(correct[i])
        # Only cut between distinct margins: ties are decided together.
        if rank < len(order) and margins[order[rank]] == margins[i]:
            continue
        precision = hits / rank
        if precision >= target_precision:
            best = (margins[i], precision, rank / len(order))
    return best


def gate_stats(margins: Sequence[float], correct: Sequence[bool], tau: float) -> tuple[float, float]:
    """(coverage, precision) of automatic decisions at threshold `tau`."""
    decided = [ok for margin, ok in zip(margins, correct, strict=True) if margin >= tau]
    coverage = len(decided) / len(margins) if margins else 0.0
    precision = sum(decided) / len(decided) if decided else 1.0
    return coverage, precision


def margin(scores: Sequence[float]) -> float:
    """Top-1 minus top-2 of `scores` (best first); infinite when there is no second."""
    return scores[0] - scores[1] if len(scores) > 1 else math.inf


def decide(scores: Sequence[float], tau: float) -> bool:
    """Whether the first of `scores` (best first) is chosen automatically: its margin is at least `tau`."""
    return bool(scores) and margin(scores) >= tau
