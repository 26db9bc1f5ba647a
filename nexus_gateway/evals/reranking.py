"""Re-ranking evaluation: below the margin gate, the local model's evidence re-orders the retrieval's top k.

For each case whose margin is below `tau`, the `Reranker` (generation/rerank.py) scores the best k
tools of its candidate set (from `evals/routing.score_cases`) and fuses the scores with retrieval's.
The re-ranked top-1 is its choice, else (none, or above the gate) the retrieval's top-1; a choice is right
when it is the gold tool or one of the case's alternatives.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.engine.settings import EngineSettings
from nexus_gateway.engine.worker import LocalEngine
from nexus_gateway.evals.dataset import Case, tool_records
from nexus_gateway.evals.routing import Scored, ToolPool, check_tools_known, score_cases
from nexus_gateway.generation.rerank import WEIGHT, Reranker
from nexus_gateway.routing.embedders import Embedder
from nexus_gateway.routing.fusion import FusionMethod
from nexus_gateway.routing.query import routing_text

Progress = Callable[[int, int], None]


async def evaluate_reranking(
    tools: Sequence[dict[str, Any]],
    cases: Sequence[Case],
    sizes: Sequence[int],
    embedder: Embedder,
    settings: EngineSettings,
    *,
    seed: int = 0,
    method: FusionMethod = "linear",
    tau: float = float("inf"),
    k: int = 5,
    weight: float = WEIGHT,
    progress: Progress | None = None,
) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """`rerank_cases` at each size (the same candidate sets as `evaluate_routing`), by size."""
    check_tools_known(tools, cases)
    pool = ToolPool(tools, embedder)
    by_name = tool_records(tools)
    records = [by_name[name] for name in pool.names]
    queries = embedder.embed_batch([routing_text(case.query) for case in cases])
    reports: dict[str, dict[str, Any]] = {}
    lines: list[dict[str, Any]] = []
    for size in sizes:
        scored = score_cases(pool, cases, queries, size, seed, method, keep=k)
        report, size_lines = await rerank_cases(
            records, cases, scored, settings, tau=tau, k=k, weight=weight, progress=progress
        )
        reports[str(size)] = report
        lines += [{"size": size, **line} for line in size_lines]
    return reports, lines


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


async def rerank_cases(
    records: Sequence[ToolRecord],
    cases: Sequence[Case],
    scored: Sequence[Scored],
    settings: EngineSettings,
    *,
    tau: float,
    k: int,
    weight: float = WEIGHT,
    progress: Progress | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The re-ranked report at one candidate-set size, and one line per re-ranked case."""
    with tempfile.TemporaryDirectory(prefix="nexus-rerank-") as blocks:  # signatures' blocks, reused in the run
        return await _rerank_cases(
            records, cases, scored, settings, Path(blocks), tau=tau, k=k, weight=weight, progress=progress
        )


async def _rerank_cases(
    records: Sequence[ToolRecord],
    cases: Sequence[Case],
    scored: Sequence[Scored],
    settings: EngineSettings,
    blocks: Path,
    *,
    tau: float,
    k: int,
    weight: float,
    progress: Progress | None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    below = [i for i, s in enumerate(scored) if s.margin < tau]
    correct = [s.gold_rank == 1 for s in scored]
    lines: list[dict[str, Any]] = []
    times: list[float] = []
    chose_none = in_shown = right_when_shown = 0
    async with LocalEngine(settings, compiled_root=blocks) as engine:
        reranker = Reranker(engine, k=k, weight=weight)
        for done, i in enumerate(below):
            case, shown = cases[i], [records[j] for j in scored[i].top[:k]]
            reranked = await reranker.rerank(case.query, shown, scored[i].top_scores)
            times.append(reranked.ms)
            if reranked.choice is None:
                chose_none += 1
            else:
                correct[i] = reranked.choice in case.right
            if case.right.intersection(reranked.candidates):
                in_shown += 1
                right_when_shown += reranked.choice in case.right
            line = {"id": case.id, "query": case.query, "gold": case.tool, "retrieval_right": scored[i].gold_rank == 1}
            lines.append(line | reranked.trace())
            if progress:
                progress(done + 1, len(below))
    n = len(scored)
    report = {
        "top1_reranked": round(sum(correct) / n, 4) if n else None,
        "reranked": len(below),
        "rerank_k": k,
        "chose_none": chose_none,
        "gold_among_shown": in_shown,
        "chosen_right_when_shown": round(right_when_shown / in_shown, 4) if in_shown else None,
        "rerank_ms_p50": _percentile(times, 0.5),
        "rerank_ms_p90": _percentile(times, 0.9),
        "weight": weight,
        "model": settings.model or "default",
    }
    return report, lines
