"""A retriever built on first use, so a gateway that never searches never loads numpy or an embedder.

The gateway holds one from start-up; the first `index` or `search` builds the configured retriever
(hybrid.py: numpy, onnxruntime or llama.cpp, the saved index) in the worker thread that calls it. In
passthrough mode nothing indexes until a search, so `serve` in passthrough loads none of them; in routed
mode the background indexer's first run pays for the build, off every request path.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.routing.retriever import HasEmbedder, Hit, IndexProgress, Retriever, TakesExamples

if TYPE_CHECKING:
    from nexus_gateway.routing.embedders import Embedder
    from nexus_gateway.routing.fusion import FusionMethod  # fusion.py imports numpy
    from nexus_gateway.state import Blobs


class LazyRetriever:
    """`build_retriever(spec, state_dir, method=method)` on first use; a `Retriever` meanwhile."""

    def __init__(
        self,
        spec: str,
        state_dir: Path,
        *,
        method: FusionMethod = "linear",
        shared: Callable[[str], Blobs | None] | None = None,
    ) -> None:
        """`shared`: the store's `blobs` (vectors shared by replicas, by namespace), when there is one."""
        self._spec = spec
        self._shared = shared
        self._state_dir = state_dir
        self._method: FusionMethod = method
        self._lock = threading.Lock()
        self._built: Retriever | None = None
        self._examples: Mapping[str, Sequence[str]] = {}
        self.tau = math.inf
        """The built retriever's margin gate; never automatic before it is built."""

    @property
    def built(self) -> Retriever | None:
        """The configured retriever once the first `index` or `search` has built it."""
        return self._built

    @property
    def embedder(self) -> Embedder | None:
        """The built retriever's embedder; None before it is built, or when it has none (`bm25`)."""
        built = self._built
        return built.embedder if isinstance(built, HasEmbedder) else None

    def load(self) -> Retriever:
        """The configured retriever, built now if it is not yet (blocking: call it in a worker thread)."""
        with self._lock:
            if self._built is None:
                from nexus_gateway.routing.hybrid import build_retriever  # numpy and the embedder load here

                self._built = build_retriever(self._spec, self._state_dir, method=self._method, shared=self._shared)
                if self._examples and isinstance(self._built, TakesExamples):
                    self._built.use_examples(self._examples)
                self.tau = self._built.tau
            return self._built

    def use_examples(self, examples: Mapping[str, Sequence[str]]) -> None:
        """Handed to the built retriever when it takes examples (remembered until it is built)."""
        with self._lock:
            self._examples = examples
            built = self._built
        if isinstance(built, TakesExamples):
            built.use_examples(examples)

    def index(self, records: Sequence[ToolRecord], progress: IndexProgress | None = None) -> None:
        self.load().index(records, progress)

    def search(self, query: str, k: int) -> list[Hit]:
        return self.load().search(query, k)
