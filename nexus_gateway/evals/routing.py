"""Routing evaluation: for each case, the gold tool among N-1 seeded distractors; top-1, recall@5, gate.

Everything is embedded once (tools in a batch, queries in a batch); each candidate set then takes rows
of the quantized tool matrix and BM25 statistics of its own candidates, exactly what the gateway's
index holds for a catalog of that size.
"""

from __future__ import annotations

import dataclasses
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nexus_gateway.catalog import content_hash
from nexus_gateway.errors import ConfigError
from nexus_gateway.evals.dataset import Case
from nexus_gateway.routing import gate
from nexus_gateway.routing.bm25 import LEXICAL_WEIGHTS, idf, term_scores, tokenize, weighted_terms
from nexus_gateway.routing.embedders import Embedder
from nexus_gateway.routing.fusion import FusionMethod, fuse, top_k
from nexus_gateway.routing.gate import gate_stats
from nexus_gateway.routing.mentions import mention_bonus, product_words
from nexus_gateway.routing.names import NAME_WEIGHT, name_coverage, name_terms, own_name
from nexus_gateway.routing.operations import misfit_penalty
from nexus_gateway.routing.query import routing_text
from nexus_gateway.routing.retriever import DENSE_FIELDS, FieldWeights, ToolFields
from nexus_gateway.routing.slb import SemanticLookasideBuffer
from nexus_gateway.routing.usage import ToolRows, UsageExamples, examples_of, other_rows, with_rows

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Scored:
    gold_rank: int
    """1-based rank of the best-ranked right tool (the gold one or an alternative among the candidates)."""
    margin: float
    top: tuple[int, ...] = ()
    """Pool indices of the best tools, best first (ties against the right tools), for re-ranking."""
    top_scores: tuple[float, ...] = ()
    """Their fused retrieval scores."""


class ToolPool:
    """Every tool once: its fields, INT8 vector of its embedded text, BM25F term frequencies; each spelled by the
    code the gateway's index uses (`ToolFields`, `weighted_terms`)."""

    def __init__(
        self,
        tools: Sequence[dict[str, Any]],
        embedder: Embedder,
        *,
        lexical: FieldWeights = LEXICAL_WEIGHTS,
        dense: FieldWeights = DENSE_FIELDS,
        examples: UsageExamples | None = None,
    ) -> None:
        """`examples`: example requests by tool content hash, laid out as the gateway's index does
        (`ToolRows`: a tool's dense score blends its description's and its best other row's, a passage or an
        example; BM25 reads them)."""
        self.names = [tool["name"] for tool in tools]
        self.servers = np.array([tool.get("server", "") for tool in tools], dtype=object)
        self.name_terms = [name_terms(tool["name"], tool.get("server", "")) for tool in tools]
        self.own_names = [own_name(tool["name"], tool.get("server", "")) for tool in tools]
        self.products = product_words(
            (tool["server"], tool["name"].removeprefix(f"{tool['server']}__"), tool.get("description") or "")
            for tool in tools
            if tool.get("server")
        )
        """Each server's product words (`mentions.product_words`), as the gateway's index finds them."""
        self.position = {name: i for i, name in enumerate(self.names)}
        requests = examples_of([content_hash(tool) for tool in tools], examples)
        plain = [
            ToolFields.of(t["name"], t.get("description") or "", t.get("inputSchema"), t.get("server", ""))
            for t in tools
        ]
        others = [other_rows(fields, more) for fields, more in zip(plain, requests, strict=True)]
        self.fields = [with_rows(fields, more) for fields, more in zip(plain, others, strict=True)]
        """Each tool's fields as BM25 reads them (its passages and examples with its description)."""
        self.rows = ToolRows.of([fields.text(dense) for fields in plain], others)
        self.with_examples = sum(1 for more in requests if more)
        """How many tools have example requests."""
        self.slb = SemanticLookasideBuffer(embedder)
        self.slb.sync([self.names[owner] for owner in self.rows.owners], self.rows.texts)
        self.matrix = self.slb.matrix[self.rows.starts]
        """One row a tool: its description's vector."""
        self.weigh(lexical)

    def dense(self, candidates: np.ndarray, query: np.ndarray) -> np.ndarray:
        """The candidates' dense scores (`ToolRows.best`: the description's, blended with the best other row's)."""
        if not self.rows.extra:
            scores: np.ndarray = self.matrix[candidates] @ query
            return scores
        best: np.ndarray = self.rows.best(self.slb.matrix @ query)[candidates]
        return best

    def weigh(self, lexical: FieldWeights) -> None:
        """BM25F term frequencies and lengths under these field weights (the gateway's `weighted_terms`)."""
        weighted = [weighted_terms(fields, lexical) for fields in self.fields]
        self.terms = [terms for terms, _ in weighted]
        self.lengths = np.array([length for _, length in weighted], dtype=np.float64)

    def bm25(self, query_terms: list[str], candidates: np.ndarray) -> np.ndarray:
        """BM25 over the candidate set alone (its own document frequencies), as an index of just these tools."""
        scores = np.zeros(len(candidates))
        lengths = self.lengths[candidates]
        average = float(lengths.mean()) or 1.0
        for term in set(query_terms):
            tf = np.fromiter((self.terms[c].get(term, 0) for c in candidates), dtype=np.float64, count=len(candidates))
            df = int(np.count_nonzero(tf))
            if df:
                scores += term_scores(tf, idf(len(candidates), df), lengths, average)
        return scores


def restrict_to_examples(
    tools: Sequence[dict[str, Any]], cases: Sequence[Case], examples: UsageExamples
) -> tuple[list[dict[str, Any]], list[Case]]:
    """Only the tools that have examples, and the cases whose gold tool is among them (their alternatives kept
    where they are): how a partial examples file is measured, with and without its examples alike."""
    kept = [tool for tool in tools if examples.get(content_hash(tool))]
    names = {tool["name"] for tool in kept}
    chosen = [
        dataclasses.replace(case, alternatives=tuple(name for name in case.alternatives if name in names))
        for case in cases
        if case.tool in names
    ]
    return kept, chosen


def check_tools_known(tools: Sequence[dict[str, Any]], cases: Sequence[Case]) -> None:
    """Every gold tool and alternative the cases name is in the tool set, else a `ConfigError` naming some."""
    names = {tool["name"] for tool in tools}
    unknown = sorted({name for case in cases for name in case.right} - names)
    if unknown:
        raise ConfigError(f"the cases name {len(unknown)} tools missing from the tool set, e.g. {unknown[:3]}")


def candidate_set(pool: ToolPool, case: Case, index: int, size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The case's candidates (pool indices: the gold tool first, then `size - 1` distractors drawn with a seed of
    its own) and which of them are right (the gold tool and any alternative drawn; at `size` >= the pool, all)."""
    rng = random.Random(f"{seed}:{size}:{index}")
    gold, pool_size = pool.position[case.tool], len(pool.names)
    others = rng.sample(range(pool_size - 1), min(size, pool_size) - 1)
    candidates = np.array([gold] + [o + (o >= gold) for o in others], dtype=np.int64)
    right = np.zeros(len(candidates), dtype=bool)
    right[0] = True
    if case.alternatives:
        right |= np.isin(candidates, [pool.position[name] for name in case.alternatives if name in pool.position])
    return candidates, right


def right_rank(scores: np.ndarray, right: np.ndarray) -> int:
    """1-based rank of the best-scored right candidate; ties count against it."""
    return 1 + int(np.count_nonzero(~right & (scores >= scores[right].max())))


def score_cases(
    pool: ToolPool,
    cases: Sequence[Case],
    queries: np.ndarray,
    size: int,
    seed: int,
    method: FusionMethod,
    *,
    keep: int = 0,
) -> list[Scored]:
    """Each case's rank of its right tools (`candidate_set`) and margin among its candidates, and (`keep`) its
    best `keep` tools."""
    scored = []
    for i, case in enumerate(cases):
        candidates, right = candidate_set(pool, case, i, size, seed)
        dense = pool.dense(candidates, queries[i])
        terms = tokenize(routing_text(case.query))
        fused = fuse(dense, pool.bm25(terms, candidates), method)
        if method == "linear":  # as the gateway's index scores (hybrid.py)
            said = name_coverage(set(terms), [pool.name_terms[c] for c in candidates])
            fused = fused + mention_bonus(case.query, pool.servers[candidates], pool.products) + NAME_WEIGHT * said
            fused = fused - misfit_penalty(case.query, [pool.own_names[c] for c in candidates], fused)
        best = top_k(fused, 2)
        margin = gate.margin([float(fused[i]) for i in best])
        order = np.lexsort((right, -fused))[:keep]  # right tools last among ties
        top = tuple(int(candidates[j]) for j in order)
        top_scores = tuple(float(fused[j]) for j in order)
        scored.append(Scored(right_rank(fused, right), margin, top, top_scores))
    return scored


DETAIL_TOP = 5
"""Tools listed for each case in `eval routing --details`."""


def detail_line(pool: ToolPool, case: Case, size: int, scored: Scored, tau: float) -> dict[str, Any]:
    """One case at one size, as `eval routing --details` writes it: the rank of its best-ranked right tool,
    whether the margin gate would have chosen alone, and the best tools with their fused scores."""
    return {
        "id": case.id,
        "query": case.query,
        "size": size,
        "gold": case.tool,
        "alternatives": list(case.alternatives),
        "right_rank": scored.gold_rank,
        "automatic": scored.margin >= tau,
        "top": [
            {"name": pool.names[tool], "score": round(score, 4), "right": pool.names[tool] in case.right}
            for tool, score in zip(scored.top, scored.top_scores, strict=True)
        ],
    }


def _scan_us(pool: ToolPool, queries: np.ndarray, size: int, rng: random.Random) -> float:
    rows = rng.sample(range(len(pool.names)), min(size, len(pool.names)))
    slb = pool.slb.subset(rows)
    samples = []
    for query in queries[:200]:
        start = time.perf_counter_ns()
        slb.scan(query)
        samples.append(time.perf_counter_ns() - start)
    return round(statistics.median(samples) / 1000, 2)


def evaluate_routing(
    tools: Sequence[dict[str, Any]],
    cases: Sequence[Case],
    sizes: Sequence[int],
    embedder: Embedder,
    *,
    seed: int = 0,
    method: FusionMethod = "linear",
    tau: float = float("inf"),
    progress: Progress | None = None,
    examples: UsageExamples | None = None,
    details: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The `eval routing` report (DESIGN.md format), plus the margins for calibration. `examples`: tools' example
    requests by content hash, indexed as the gateway indexes them. `details`: one line per case and size is
    appended to it (`detail_line`: where the right tool ranked, the best `DETAIL_TOP` tools with their scores)."""
    check_tools_known(tools, cases)
    pool = ToolPool(tools, embedder, examples=examples)
    queries = embedder.embed_batch([routing_text(case.query) for case in cases])
    embed_ms = []
    timed = getattr(embedder, "inner", embedder)  # a cache's embedder: the time of an embedding, not of a lookup
    for case in cases[:50]:
        start = time.perf_counter_ns()
        timed.embed_batch([routing_text(case.query)])
        embed_ms.append((time.perf_counter_ns() - start) / 1e6)
    report: dict[str, Any] = {"n_cases": len(cases), "sizes": {}, "scan_us_p50": {}}
    report["embed_ms_p50"] = round(statistics.median(embed_ms), 3) if embed_ms else None
    rng = random.Random(seed)
    for done, size in enumerate(sizes):
        if progress:
            progress(f"N = {size}", done, len(sizes))
        scored = score_cases(pool, cases, queries, size, seed, method, keep=DETAIL_TOP if details is not None else 0)
        if details is not None:
            details.extend(detail_line(pool, case, size, one, tau) for case, one in zip(cases, scored, strict=True))
        correct = [s.gold_rank == 1 for s in scored]
        coverage, precision = gate_stats([s.margin for s in scored], correct, tau)
        report["sizes"][str(size)] = {
            "top1": round(sum(correct) / len(scored), 4),
            "recall@5": round(sum(s.gold_rank <= 5 for s in scored) / len(scored), 4),
            "auto_coverage": round(coverage, 4),
            "auto_precision": round(precision, 4),
        }
        report["scan_us_p50"][str(size)] = _scan_us(pool, queries, size, rng)
    report["embedder"] = embedder.name
    report["tools_with_examples"] = pool.with_examples
    report["fusion"] = method
    report["tau"] = tau
    return report
