"""When to splice a block, when to re-decode part of it, when to prefill: a function of depth.

`depth` is how far the block moves from its anchor: the session tokens between the preamble and the tool
text (n_past minus the anchor). A fresh session is depth 0, where a splice is exact.

    depth <= P        splice
    P < depth < D     splice, then re-decode the last R(depth) of the block's tokens against the session
    depth >= D        plain prefill (and whenever R reaches 1: a splice never precedes a full re-decode)

R comes from `curve`, knots (depth, R) read as a step: a depth takes the R of the first knot at or beyond
it, so a depth between two calibrated depths gets the larger, safer fraction. Without knots R rises
linearly from 0 at P to 1 at D. The defaults (P = 0, D = 1) splice only at depth 0, which is exact. A
packaged model ships the values calibrated for it (engine/models.py, `PackagedModel.splice`); a
`nexus-gateway calibrate splice` run on this machine stores its own in `splice_policy.json` beside the
blocks, which then takes precedence.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

logger = logging.getLogger(__name__)

PlacementMode = Literal["splice", "recompute", "prefill"]
"""How a tool text entered a session: spliced block, spliced then partly re-decoded, or prefilled."""
POLICY_FILE = "splice_policy.json"


@dataclass(frozen=True)
class Decision:
    mode: PlacementMode
    fraction: float
    recompute: int
    """Block tokens re-decoded after the splice (every token when the mode is prefill)."""


@dataclass(frozen=True, kw_only=True)
class SplicePolicy:
    P: int = 0
    D: int = 1
    curve: tuple[tuple[int, float], ...] = ()
    kl_target: float | None = None
    source: str = "default: splice only at depth 0"

    def __post_init__(self) -> None:
        if not -1 <= self.P < self.D:
            raise ValueError(f"splice policy needs -1 <= P < D, got P={self.P}, D={self.D}")

    def fraction(self, depth: int) -> float:
        """R(depth): the share of the block's tokens to re-decode, 0 to 1."""
        if depth <= self.P:
            return 0.0
        if depth >= self.D:
            return 1.0
        for knot_depth, fraction in self.curve:
            if knot_depth >= depth:
                return min(1.0, max(0.0, fraction))
        if self.curve:
            return 1.0
        return (depth - self.P) / (self.D - self.P)

    def decide(self, depth: int, n_tokens: int) -> Decision:
        fraction = self.fraction(depth)
        recompute = min(n_tokens, math.ceil(fraction * n_tokens - 1e-9))
        if depth >= self.D or recompute >= n_tokens:
            return Decision("prefill", 1.0, n_tokens)
        return Decision("splice" if recompute == 0 else "recompute", fraction, recompute)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["curve"] = [list(knot) for knot in self.curve]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SplicePolicy:
        curve = tuple((int(depth), float(fraction)) for depth, fraction in data.get("curve", []))
        return cls(
            P=int(data["P"]),
            D=int(data["D"]),
            curve=curve,
            kl_target=data.get("kl_target"),
            source=str(data.get("source", "file")),
        )


def load_policy(directory: Path, fallback: SplicePolicy | None = None) -> SplicePolicy:
    """The calibrated policy stored beside the blocks; else `fallback` (the model's shipped one), else the
    default (also when the file is unreadable)."""
    path = directory / POLICY_FILE
    otherwise = fallback or SplicePolicy()
    if not path.exists():
        return otherwise
    try:
        return SplicePolicy.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        logger.warning("ignoring unreadable splice policy %s (%s); using: %s", path, exc, otherwise.source)
        return otherwise


def save_policy(directory: Path, policy: SplicePolicy) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / POLICY_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(policy.to_json(), indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


@dataclass(frozen=True)
class Cell:
    """One measured (depth, R) point: does splicing with that recompute fraction match prefill?"""

    depth: int
    fraction: float
    kl_mean: float
    top1_agree: float
    greedy_agree: float

    def passes(self, kl_target: float) -> bool:
        return self.kl_mean <= kl_target and self.top1_agree >= 1.0 and self.greedy_agree >= 1.0


@dataclass(frozen=True)
class Calibration:
    policy: SplicePolicy
    needed: dict[int, float] = field(default_factory=dict)
    """Per measured depth, the smallest R that passes (1.0: only a prefill does)."""


def calibrate(cells: Iterable[Cell], *, kl_target: float, source: str) -> Calibration:
    """The most splicing policy the measurements allow: at each measured depth the smallest R below 1
    from which every larger measured R also passes, made non-decreasing in depth; prefill beyond the last
    depth where some R < 1 passes (nothing unmeasured past it is trusted)."""
    by_depth: dict[int, list[Cell]] = {}
    for cell in cells:
        by_depth.setdefault(cell.depth, []).append(cell)
    needed: dict[int, float] = {}
    running = 0.0
    for depth in sorted(by_depth):
        partial = sorted((c for c in by_depth[depth] if c.fraction < 1.0), key=lambda c: c.fraction)
        smallest = 1.0
        for i, cell in enumerate(partial):
            if all(other.passes(kl_target) for other in partial[i:]):
                smallest = cell.fraction
                break
        running = max(running, smallest)
        needed[depth] = running
    spliceable = [depth for depth, fraction in needed.items() if fraction == 0.0]
    p = max(spliceable) if spliceable and min(needed) in spliceable else -1
    if p == -1:
        return Calibration(SplicePolicy(P=-1, D=0, kl_target=kl_target, source=source), needed)
    usable = [depth for depth, fraction in needed.items() if fraction < 1.0]
    last = max(usable)
    curve = tuple((depth, needed[depth]) for depth in sorted(needed) if p < depth <= last)
    return Calibration(SplicePolicy(P=p, D=last + 1, curve=curve, kl_target=kl_target, source=source), needed)
