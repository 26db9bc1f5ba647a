"""Hybrid scoring: dense cosine and BM25 fused into one score per tool. Pure functions."""

from __future__ import annotations

from typing import Literal

import numpy as np

FusionMethod = Literal["linear", "rrf", "dense", "lexical"]

LEXICAL_WEIGHT = 0.2
"""Weight of the max-normalized BM25F score beside the cosine: chosen 2026-12-03 with the field weights by
`nexus-gateway eval fields` (routing/bm25.LEXICAL_WEIGHTS; 0.3 before)."""
RRF_K = 60


def _ranks(scores: np.ndarray) -> np.ndarray:
    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(len(scores), dtype=np.float64)
    ranks[order] = np.arange(1, len(scores) + 1)
    return ranks


def fuse(
    dense: np.ndarray,
    lexical: np.ndarray,
    method: FusionMethod = "linear",
    weight: float = LEXICAL_WEIGHT,
    *,
    peak: float | None = None,
) -> np.ndarray:
    """One score per tool. `linear`: cosine + weight x BM25 / max BM25 (margins stay on the cosine scale);
    `rrf`: reciprocal-rank fusion; `dense` / `lexical`: one side alone."""
    if method == "dense":
        return np.asarray(dense, dtype=np.float64)
    if method == "lexical":
        return np.asarray(lexical, dtype=np.float64)
    if method == "rrf":
        return 1.0 / (RRF_K + _ranks(dense)) + 1.0 / (RRF_K + _ranks(lexical))
    if peak is None:
        peak = float(lexical.max()) if len(lexical) else 0.0
    normalized = lexical / peak if peak > 0 else np.zeros_like(lexical, dtype=np.float64)
    return np.asarray(dense, dtype=np.float64) + weight * normalized


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best scores, best first (ties keep index order)."""
    k = min(k, len(scores))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    part = np.argpartition(-scores, k - 1)[:k]
    cut = scores[part].min()
    above = np.flatnonzero(scores > cut)  # ties at the cut: the lowest indices, not whichever the partition kept
    chosen = np.concatenate((above, np.flatnonzero(scores == cut)[: k - len(above)]))
    return chosen[np.lexsort((chosen, -scores[chosen]))]
