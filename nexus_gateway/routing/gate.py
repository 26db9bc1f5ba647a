"""The margin gate: route automatically when the best tool clearly beats the second.

`margin = score(top-1) - score(top-2)` on the fused score. At `margin >= tau` the router decides
alone; below it, candidates are re-ranked or handed back to the host. `tau` is calibrated on a
labelled set as the smallest margin whose automatic decisions reach a target precision.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from nexus_gateway.errors import ConfigError


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

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> Calibration:
        try:
            return cls(**json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError) as exc:
            raise ConfigError(f"{path}: not a routing calibration ({exc})") from None


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
