"""The gateway's retriever: the semantic lookaside buffer and BM25, fused, behind the margin gate."""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.routing.bm25 import BM25Retriever
from nexus_gateway.routing.embedders import Embedder, embedder_factory, make_embedder
from nexus_gateway.routing.fusion import FusionMethod, fuse, top_k
from nexus_gateway.routing.gate import Calibration
from nexus_gateway.routing.retriever import Hit, Retriever, tool_text
from nexus_gateway.routing.slb import SemanticLookasideBuffer

logger = logging.getLogger(__name__)

DEFAULT_CALIBRATION = Path(__file__).resolve().parent / "calibration.json"
LARGE_POOL = 256
"""Above FAISS_ABOVE tools, the dense and lexical top lists of this length are fused."""


class HybridRetriever:
    """Dense INT8 scan + BM25, fused; `tau` from a calibration made with the same embedder."""

    def __init__(
        self,
        embedder: Embedder,
        *,
        index_path: Path | None = None,
        calibration: Calibration | None = None,
        method: FusionMethod = "linear",
    ) -> None:
        self._lock = threading.Lock()  # index() runs in a worker thread while searches may run in others
        self.slb = SemanticLookasideBuffer(embedder)
        self.lexical = BM25Retriever()
        self.method = method
        self.index_path = index_path
        self.tau = math.inf
        if calibration is not None:
            if calibration.embedder == embedder.name:
                self.tau = calibration.tau
            else:
                logger.warning(
                    "routing calibration was made with %s, not %s: nothing is routed automatically until "
                    "`nexus-gateway calibrate routing` is run", calibration.embedder, embedder.name,
                )  # fmt: skip
        if index_path is not None and index_path.exists() and self.slb.load(index_path):
            logger.info("loaded %d tool vectors from %s", len(self.slb), index_path)

    def index(self, records: Sequence[ToolRecord]) -> None:
        names = [record.name for record in records]
        texts = [tool_text(record) for record in records]
        slb = self.slb.fork()
        slb.sync(names, texts)  # embeds outside the lock: searches go on with the old index meanwhile
        lexical = BM25Retriever()
        lexical.index_texts(names, texts)
        with self._lock:
            self.slb, self.lexical = slb, lexical
        if self.slb.embedded_last_sync:
            logger.info("embedded %d new or changed tools (%d in the index)", self.slb.embedded_last_sync, len(names))
            if self.index_path is not None:
                self.slb.save(self.index_path)

    def search(self, query: str, k: int) -> list[Hit]:
        with self._lock:
            slb, lexical = self.slb, self.lexical
        if not len(slb):
            return []
        vector = slb.embed_query(query)
        lexical_scores = lexical.scores(query)
        if not slb.large:
            scores = fuse(slb.scan(vector), lexical_scores, self.method)
            return [Hit(slb.names[i], float(scores[i])) for i in top_k(scores, k)]
        # Large catalogs: fuse over the union of the dense and lexical top lists (faiss answers the dense one).
        dense_rows, _ = slb.top(vector, LARGE_POOL)
        rows = np.union1d(dense_rows, top_k(lexical_scores, LARGE_POOL))
        peak = float(lexical_scores.max())
        scores = fuse(slb.scores_of(vector, rows), lexical_scores[rows], self.method, peak=peak)
        return [Hit(slb.names[rows[i]], float(scores[i])) for i in top_k(scores, k)]


def check_retriever(spec: str) -> None:
    """Raise the `ConfigError` `build_retriever` would raise for this embedder spec, loading nothing."""
    if spec != "bm25":
        embedder_factory(spec)


def build_retriever(spec: str, state_dir: Path, *, method: FusionMethod = "linear") -> Retriever:
    """`bm25` for lexical only; any embedder spec (`default`, `hashing`, `gguf:PATH`) for the hybrid index.

    The index is kept in `state_dir`; the margin gate's tau comes from `state_dir/calibration.json`
    (written by `nexus-gateway calibrate routing`), else from the calibration shipped for the default embedder.
    """
    if spec == "bm25":
        return BM25Retriever()
    embedder = make_embedder(spec)
    calibration = None
    for candidate in (state_dir / "calibration.json", DEFAULT_CALIBRATION):
        if candidate.exists():
            calibration = Calibration.load(candidate)
            break
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in embedder.name)
    return HybridRetriever(embedder, index_path=state_dir / f"index-{safe}.npz", calibration=calibration, method=method)
