"""The gateway's retriever: the semantic lookaside buffer and BM25, fused, behind the margin gate."""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.routing.bm25 import BM25Retriever, tokenize
from nexus_gateway.routing.embedders import Embedder, make_embedder
from nexus_gateway.routing.fusion import FusionMethod, fuse, top_k
from nexus_gateway.routing.gate import Calibration
from nexus_gateway.routing.mentions import Products, mention_bonus, product_words
from nexus_gateway.routing.names import NAME_WEIGHT, name_coverage, name_terms, own_name
from nexus_gateway.routing.operations import misfit_penalty
from nexus_gateway.routing.query import routing_text
from nexus_gateway.routing.retriever import DENSE_FIELDS, Hit, IndexProgress, Retriever, ToolFields
from nexus_gateway.routing.slb import SemanticLookasideBuffer
from nexus_gateway.routing.usage import ToolRows, UsageExamples, examples_of, other_rows, tool_scores, with_rows
from nexus_gateway.runtime.statefile import load_json

if TYPE_CHECKING:
    from nexus_gateway.state import Blobs

logger = logging.getLogger(__name__)

DEFAULT_CALIBRATION = Path(__file__).resolve().parent / "calibration.json"
INDEX_BATCH = 32
"""Tools embedded between two publications of a growing index (a cold start serves searches as it goes)."""
LARGE_POOL = 256
"""Above FAISS_ABOVE rows, the dense and lexical top lists of this many tools are fused (the dense list reads
`ToolRows.per_tool` rows a tool, since a tool's passages and examples crowd the top rows together)."""


class HybridRetriever:
    """Dense INT8 scan + BM25, fused; `tau` from a calibration made with the same embedder. A tool's dense score
    blends its description's with its best example request's (routing/usage.py)."""

    def __init__(
        self,
        embedder: Embedder,
        *,
        index_path: Path | None = None,
        calibration: Calibration | None = None,
        method: FusionMethod = "linear",
        shared: Blobs | None = None,
    ) -> None:
        """`shared`: vectors by text hash that other replicas embedded (the store's blobs), read before
        embedding and written after, so no replica embeds what another did."""
        self._lock = threading.Lock()  # index() runs in a worker thread while searches may run in others
        self.shared = shared
        self.embedded = 0
        """Texts this retriever embedded itself (not found in the saved index or the shared store)."""
        self.slb = SemanticLookasideBuffer(embedder)
        self.lexical = BM25Retriever()
        self.rows = ToolRows.of([], [])
        self.names: list[str] = []
        """The searchable tools, in the order of `rows`' owners and of BM25's documents."""
        self.servers = np.zeros(0, dtype=object)
        """Each searchable tool's server, in the order of `names`."""
        self.name_terms: list[frozenset[str]] = []
        """Each searchable tool's `names.name_terms`, in the order of `names`."""
        self.products: Products = {}
        self.own_names: list[str] = []
        """Each searchable tool's name without its server's prefix (`names.own_name`), in the order of `names`."""
        """The searchable servers' product words (`mentions.product_words`)."""
        self._examples: dict[str, Sequence[str]] = {}
        self.method = method
        self.index_path = index_path
        self.tau = math.inf
        if calibration is not None:
            if calibration.embedder == embedder.name:
                self.tau = calibration.tau
            else:
                logger.warning(
                    "routing calibration was made with %s, not %s: nothing is routed automatically until "
                    "`nexus-gateway calibrate routing` is run",
                    calibration.embedder,
                    embedder.name,
                )
        if index_path is not None and self.slb.load(index_path):
            logger.info("loaded %d tool vectors from %s", len(self.slb), index_path)
            self.slb.sync([], [])  # remembered, not searchable: what is searchable is what `index` was given

    @property
    def embedder(self) -> Embedder:
        return self.slb.embedder

    def use_examples(self, examples: UsageExamples) -> None:
        """Index these example requests (by tool content hash) beside their tools from the next `index` on."""
        with self._lock:
            self._examples = dict(examples)

    def index(self, records: Sequence[ToolRecord], progress: IndexProgress | None = None) -> None:
        """Index exactly these tools. Embedding runs outside the lock in batches of `INDEX_BATCH`; after each
        batch the tools embedded so far become searchable and `progress(searchable, total)` is told. Tools'
        passages and example requests (`use_examples`) are embedded last, so a cold start serves every description
        first."""
        names = [record.name for record in records]
        servers = [record.server for record in records]
        products = product_words((record.server, record.upstream_name, record.description) for record in records)
        fields = [ToolFields.of_record(record) for record in records]  # BM25 weighs them; the SLB embeds `texts`
        texts = [tool.text(DENSE_FIELDS) for tool in fields]
        with self._lock:
            examples = examples_of([record.content_hash for record in records], self._examples)
        others = [other_rows(tool, requests) for tool, requests in zip(fields, examples, strict=True)]
        slb = self.slb.fork()
        missing = self._from_shared(slb, texts)
        for start in range(0, len(missing), INDEX_BATCH):
            self._learn(slb, [texts[i] for i in missing[start : start + INDEX_BATCH]])
            pending = set(missing[start + INDEX_BATCH :])
            if pending:
                ready = [i for i in range(len(names)) if i not in pending]
                chosen = (
                    [names[i] for i in ready],
                    [servers[i] for i in ready],
                    [texts[i] for i in ready],
                    [fields[i] for i in ready],
                )
                self._publish(slb.fork(), *chosen, products)
                if progress is not None:
                    progress(len(ready), len(names))
        requests = [row for tool in others for row in tool]
        new_requests = [requests[i] for i in self._from_shared(slb, requests)]
        for start in range(0, len(new_requests), INDEX_BATCH):
            self._learn(slb, new_requests[start : start + INDEX_BATCH])
            if progress is not None:
                progress(len(names), len(names))  # every tool is searchable; this checks for cancellation
        self._publish(slb, names, servers, texts, fields, products, others)
        if progress is not None:
            progress(len(names), len(names))
        if missing or new_requests:
            logger.info(
                "embedded %d new or changed tools and %d passages and example requests (%d tools in the index, %d "
                "other rows)",
                len(missing),
                len(new_requests),
                len(names),
                len(requests),
            )
            if self.index_path is not None:
                slb.save(self.index_path)

    def _from_shared(self, slb: SemanticLookasideBuffer, texts: Sequence[str]) -> list[int]:
        """Positions of the texts still without a vector after taking what the shared store holds."""
        missing = slb.missing(texts)
        if self.shared is not None and missing:
            digests = [slb.digest(texts[i]) for i in missing]
            found = slb.adopt(dict(zip(digests, self.shared.get_many(digests), strict=True)))
            if found:
                logger.info("took %d vectors other replicas embedded from the shared store", found)
                missing = slb.missing(texts)
        return missing

    def _learn(self, slb: SemanticLookasideBuffer, texts: Sequence[str]) -> None:
        """Embed `texts` into `slb`, and share their vectors."""
        slb.learn(texts)
        self.embedded += len(texts)
        if self.shared is not None and texts:
            self.shared.put_many(slb.blobs_of([slb.digest(text) for text in texts]))

    def _publish(
        self,
        slb: SemanticLookasideBuffer,
        names: list[str],
        servers: list[str],
        texts: list[str],
        fields: list[ToolFields],
        products: Products,
        others: list[list[str]] | None = None,
    ) -> None:
        others = others or [[] for _ in names]
        rows = ToolRows.of(texts, others)
        slb.sync([names[owner] for owner in rows.owners], rows.texts)  # every vector is known: this embeds nothing
        lexical = BM25Retriever()
        lexical.index_fields(names, [with_rows(tool, more) for tool, more in zip(fields, others, strict=True)])
        terms = [name_terms(name, server) for name, server in zip(names, servers, strict=True)]
        with self._lock:
            self.slb, self.lexical, self.rows, self.names = slb, lexical, rows, names
            self.servers, self.name_terms = np.array(servers, dtype=object), terms
            self.products = products
            self.own_names = [own_name(name, server) for name, server in zip(names, servers, strict=True)]

    def search(self, query: str, k: int) -> list[Hit]:
        with self._lock:
            slb, lexical, rows, names, servers = self.slb, self.lexical, self.rows, self.names, self.servers
            terms, products, own = self.name_terms, self.products, self.own_names
        if not len(slb):
            return []
        request, query = query, routing_text(query)
        vector = slb.embed_query(query)
        lexical_scores = lexical.scores(query)
        linear = self.method == "linear"  # rank fusion (rrf) has no scale to add evidence to
        named = mention_bonus(request, servers, products) if linear else np.zeros(len(names))
        request_terms = set(tokenize(query))

        def said(tools: Sequence[int]) -> np.ndarray:
            """The share of each of these tools' names the request says, weighted (`names.py`)."""
            if not linear:
                return np.zeros(len(tools))
            return NAME_WEIGHT * name_coverage(request_terms, [terms[i] for i in tools])

        if not slb.large:
            everyone = range(len(names))
            scores = fuse(rows.best(slb.scan(vector)), lexical_scores, self.method) + named + said(everyone)
            if linear:
                scores = scores - misfit_penalty(request, [own[i] for i in everyone], scores)
            return [Hit(names[i], float(scores[i])) for i in top_k(scores, k)]
        # Large catalogs: fuse over the union of the dense and lexical top lists (faiss answers the dense one) and
        # the tools of the servers the request names, each tool scored from all its rows (`tool_scores`).
        dense_rows, _ = slb.top(vector, LARGE_POOL * rows.per_tool)
        tools = np.union1d(rows.owners[dense_rows], top_k(lexical_scores, LARGE_POOL))
        tools = np.union1d(tools, np.flatnonzero(named))
        chosen = rows.rows_of(tools)
        dense = tool_scores(slb.scores_of(vector, chosen), np.searchsorted(rows.owners[chosen], tools))
        peak = float(lexical_scores.max())
        scores = fuse(dense, lexical_scores[tools], self.method, peak=peak) + named[tools] + said(tools.tolist())
        if linear:
            scores = scores - misfit_penalty(request, [own[i] for i in tools], scores)
        return [Hit(names[tools[i]], float(scores[i])) for i in top_k(scores, k)]


def build_retriever(
    spec: str,
    state_dir: Path,
    *,
    method: FusionMethod = "linear",
    shared: Callable[[str], Blobs | None] | None = None,
) -> Retriever:
    """`bm25` for lexical only; any embedder spec (`default`, `hashing`, `gguf:PATH`) for the hybrid index.

    The index is kept in `state_dir` (and its vectors in the shared store's `vectors:<embedder>` when `shared`
    gives one); the margin gate's tau comes from `state_dir/calibration.json`
    (written by `nexus-gateway calibrate routing`), else from the calibration shipped for the default embedder.
    """
    if spec == "bm25":
        return BM25Retriever()
    embedder = make_embedder(spec)
    calibration = load_json(state_dir / "calibration.json", Calibration.from_json)  # a bad one is moved aside
    if calibration is None and DEFAULT_CALIBRATION.exists():
        calibration = Calibration.load(DEFAULT_CALIBRATION)
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in embedder.name)
    blobs = None if shared is None else shared(f"vectors:{safe}")
    return HybridRetriever(
        embedder, index_path=state_dir / f"index-{safe}.npz", calibration=calibration, method=method, shared=blobs
    )
