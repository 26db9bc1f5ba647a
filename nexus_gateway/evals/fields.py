"""Field weights chosen by measurement: a grid search over development sets (`nexus-gateway eval fields`).

Each grid point is a BM25F weighting of a tool's fields (name, description, parameters, server), a choice of
fields for the embedded text, and the lexical weight of linear fusion. Every set keeps its candidate sets
(`evals/routing.candidate_set`, the seeds of `eval routing`); dense scores are computed once per choice of
embedded fields, lexical scores once per weighting, so the grid costs little more than its embeddings. A point
scores the mean over the sets of top-1 (no set dominates by its size); recall@5 breaks ties.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from nexus_gateway.evals.dataset import Case
from nexus_gateway.evals.embed_cache import CachedEmbedder
from nexus_gateway.evals.routing import ToolPool, candidate_set, check_tools_known, right_rank
from nexus_gateway.routing.bm25 import LEXICAL_WEIGHTS, tokenize
from nexus_gateway.routing.embedders import Embedder
from nexus_gateway.routing.fusion import LEXICAL_WEIGHT, fuse
from nexus_gateway.routing.query import routing_text
from nexus_gateway.routing.retriever import DENSE_FIELDS, FieldWeights

Progress = Callable[[str], None]


@dataclass(frozen=True)
class TuningSet:
    """A development set: its tool pool (distractors included), its cases, the candidate-set size."""

    name: str
    tools: Sequence[dict[str, Any]]
    cases: Sequence[Case]
    size: int


LEXICAL_GRID = [
    FieldWeights(name=n, description=1.0, parameters=p, server=s)
    for n, p, s in itertools.product((1.0, 2.0, 3.0), (0.3, 0.6, 1.0), (0.0, 0.3, 1.0))
]
"""Description is the unit; the name from as strong to three times as strong; parameters and the server from
equal down to weak (the server also left out)."""
DENSE_GRID = [FieldWeights(), FieldWeights(server=0.0)]
"""The embedded text: every field, or every field but the server."""
FUSION_GRID = (0.2, 0.3, 0.45, 0.6)


def _rates(ranks: Sequence[int]) -> tuple[float, float]:
    return sum(rank == 1 for rank in ranks) / len(ranks), sum(rank <= 5 for rank in ranks) / len(ranks)


def search_fields(
    sets: Sequence[TuningSet],
    embedder: Embedder,
    *,
    lexical_grid: Sequence[FieldWeights] = LEXICAL_GRID,
    dense_grid: Sequence[FieldWeights] = DENSE_GRID,
    fusion_grid: Sequence[float] = FUSION_GRID,
    seed: int = 0,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Every grid point's top-1 and recall@5 on every set, best first, and the current defaults' row."""
    cached = embedder if isinstance(embedder, CachedEmbedder) else CachedEmbedder(embedder)
    # per set: per dense choice, per case dense scores; per lexical weighting, per case lexical scores
    dense: dict[tuple[int, int], list[np.ndarray]] = {}
    lexical: dict[tuple[int, int], list[np.ndarray]] = {}
    rights: dict[int, list[np.ndarray]] = {}
    for s, chosen in enumerate(sets):
        check_tools_known(chosen.tools, chosen.cases)
        queries = cached.embed_batch([routing_text(case.query) for case in chosen.cases])
        terms = [tokenize(routing_text(case.query)) for case in chosen.cases]
        for d, fields in enumerate(dense_grid):
            if progress:
                progress(f"{chosen.name}: embedding tools ({d + 1}/{len(dense_grid)})")
            pool = ToolPool(chosen.tools, cached, dense=fields)
            drawn = [candidate_set(pool, case, i, chosen.size, seed) for i, case in enumerate(chosen.cases)]
            rights[s] = [right for _, right in drawn]
            dense[s, d] = [pool.matrix[candidates] @ queries[i] for i, (candidates, _) in enumerate(drawn)]
        if progress:
            progress(f"{chosen.name}: BM25F under {len(lexical_grid)} weightings")
        for w, weights in enumerate(lexical_grid):
            pool.weigh(weights)
            lexical[s, w] = [pool.bm25(terms[i], candidates) for i, (candidates, _) in enumerate(drawn)]
        cached.save()
    rows: list[dict[str, Any]] = []
    for d, w, fusion in itertools.product(range(len(dense_grid)), range(len(lexical_grid)), fusion_grid):
        per_set = {}
        for s, chosen in enumerate(sets):
            ranks = [
                right_rank(fuse(dense[s, d][i], lexical[s, w][i], "linear", fusion), rights[s][i])
                for i in range(len(chosen.cases))
            ]
            top1, recall = _rates(ranks)
            per_set[chosen.name] = {"top1": round(top1, 4), "recall@5": round(recall, 4)}
        rows.append(
            {
                "lexical": asdict(lexical_grid[w]),
                "dense": asdict(dense_grid[d]),
                "fusion": fusion,
                "mean_top1": round(float(np.mean([row["top1"] for row in per_set.values()])), 4),
                "mean_recall@5": round(float(np.mean([row["recall@5"] for row in per_set.values()])), 4),
                "sets": per_set,
            }
        )
    rows.sort(key=lambda row: (-row["mean_top1"], -row["mean_recall@5"]))
    current = {"lexical": asdict(LEXICAL_WEIGHTS), "dense": asdict(DENSE_FIELDS), "fusion": LEXICAL_WEIGHT}
    return {
        "embedder": embedder.name,
        "seed": seed,
        "sets": [
            {"name": chosen.name, "cases": len(chosen.cases), "tools": len(chosen.tools), "size": chosen.size}
            for chosen in sets
        ],
        "objective": "mean over the sets of top-1; ties broken by mean recall@5",
        "best": rows[0],
        "current": next((row for row in rows if _same(row, current)), None),
        "grid": rows,
    }


def _same(row: dict[str, Any], point: dict[str, Any]) -> bool:
    return all(row[key] == value for key, value in point.items())
