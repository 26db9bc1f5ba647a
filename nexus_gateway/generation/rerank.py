"""`Reranker`: below the margin gate, the local model's evidence re-orders the best few tools.

    request, top-k tools, their retrieval scores
        -> Engine.request_likelihoods: log P(request | tool's line) for each, and with no tool
        -> fused = z(retrieval) + weight * z(likelihood)     (z: standardized over the k candidates)
        -> the best fused candidate; None when no tool makes the request likelier than no tool at all

Every candidate is scored; nothing is sampled, so the model cannot lean to the first names shown. Both
kinds of evidence are standardized over the candidates before they are added, so the pick is the
retrieval's when the model is indifferent (equal likelihoods) and the model's when retrieval is (equal
scores). `WEIGHT` was chosen on the read everyday sets and MetaTool cases disjoint from those reported
(below). The prompt is the argument filler's (preamble, the tool's line with its whole description, the
request as the user turn): the same for every catalog, no wording tuned to one set.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.engine import Engine

DEFAULT_K = 5
WEIGHT = 0.75
"""How much the model's evidence counts against retrieval's (both standardized). Chosen 2026-12-08 by re-fusing the
saved scores of every re-ranked case (`eval routing --rerank --rerank-k 8 --details`, weights 0 to 2, k 3 to 8):
at k = 5, the everyday dev, check, fresh and unseen sets at 843 tools re-ranked to 78.1 % top-1 on average at
weight 1 (the value chosen on MetaTool in session 10, before retrieval read kinds, idioms and mentions), 80.8 % at
0.75 and 81.0 % at 0.6, against 79.8 % for retrieval alone; MetaTool's tuning split (`--seed 1 --limit 200`, N =
199) 61.5 % at 1, 62.5 % at 0.75 and 0.6. 0.75 keeps more of the decisive calls (`Reranked.decisive`; their
precision is 89 % at either weight)."""
DECISIVE_LEAD = 1.0
"""How far (in standardized units) the best fused candidate must be ahead of the second, besides retrieval and
the model both putting it first, for the choice to be taken without asking (`Reranked.decisive`)."""


def standardized(values: Sequence[float]) -> list[float]:
    """`values` as z-scores over themselves; all zero when they do not differ."""
    if len(values) < 2:
        return [0.0 for _ in values]
    mean, spread = statistics.fmean(values), statistics.pstdev(values)
    return [(value - mean) / spread if spread > 1e-9 else 0.0 for value in values]


def fuse(retrieval: Sequence[float], likelihood: Sequence[float], weight: float = WEIGHT) -> list[float]:
    """Retrieval's and the model's evidence, standardized and added (`weight` on the model's)."""
    return [r + weight * m for r, m in zip(standardized(retrieval), standardized(likelihood), strict=True)]


@dataclass(frozen=True)
class Reranked:
    candidates: tuple[str, ...]
    """The names scored, in retrieval order."""
    choice: str | None
    """The best fused candidate; None when no candidate makes the request likelier than no tool."""
    retrieval: tuple[float, ...]
    likelihood: tuple[float, ...]
    """log P(request | candidate's line), summed over the request's tokens."""
    without: float
    """log P(request) after no tool."""
    fused: tuple[float, ...]
    ms: float
    decoded_tokens: int

    @property
    def lead(self) -> float:
        """How far the best fused candidate is ahead of the second; infinite with one candidate."""
        ordered = sorted(self.fused, reverse=True)
        return ordered[0] - ordered[1] if len(ordered) > 1 else float("inf")

    def decisive(self, lead: float = DECISIVE_LEAD) -> bool:
        """Whether the choice stands clear of the other candidates: retrieval and the model each put it
        first, and it leads the second by `lead`. When two tools fit a request about equally (`read_file` of
        two servers, `geocode` and `reverse_geocode`), or the two kinds of evidence disagree, which one the
        fused score puts first is close to chance (on a 30-request everyday development sample, 7 called a
        wrong tool when either condition alone was enough)."""
        if self.choice is None:
            return False
        agrees = (
            self.candidates[0] == self.choice and max(range(len(self.likelihood)), key=self.likelihood.__getitem__) == 0
        )
        return agrees and self.lead >= lead

    def trace(self) -> dict[str, Any]:
        return {
            "reranked": True,
            "candidates": list(self.candidates),
            "choice": self.choice,
            "lead": round(self.lead, 3) if len(self.fused) > 1 else None,
            "scores": [
                {"name": name, "retrieval": round(r, 4), "likelihood": round(m, 3), "fused": round(f, 3)}
                for name, r, m, f in zip(self.candidates, self.retrieval, self.likelihood, self.fused, strict=True)
            ],
            "likelihood_without_tool": round(self.without, 3),
            "rerank_ms": self.ms,
            "rerank_tokens": self.decoded_tokens,
        }


class Reranker:
    def __init__(self, engine: Engine, *, k: int = DEFAULT_K, weight: float = WEIGHT) -> None:
        if k < 1:
            raise ValueError("re-ranking needs at least one candidate")
        self.engine = engine
        self.k = k
        self.weight = weight

    async def rerank(self, query: str, records: Sequence[ToolRecord], scores: Sequence[float]) -> Reranked:
        """The first `k` of `records` (best first, with their retrieval `scores`) re-ordered for `query`."""
        shown = list(records[: self.k])
        retrieval = tuple(float(score) for score in scores[: len(shown)])
        if len(retrieval) != len(shown):
            raise ValueError("re-ranking needs a retrieval score for every candidate")
        scored = await self.engine.request_likelihoods(shown, query)
        fused = tuple(fuse(retrieval, scored.per_tool, self.weight))
        best = max(range(len(shown)), key=lambda i: (fused[i], -i))  # ties: retrieval order
        explains = max(scored.per_tool) > scored.without
        choice = shown[best].name if explains else None
        names = tuple(record.name for record in shown)
        ms = round(scored.total_s * 1000, 2)
        return Reranked(names, choice, retrieval, scored.per_tool, scored.without, fused, ms, scored.decoded_tokens)
