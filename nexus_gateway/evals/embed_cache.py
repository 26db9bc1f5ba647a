"""Vectors of texts embedded before, kept for evaluations that embed the same texts again and again."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from nexus_gateway.routing.embedders import Embedder


class CachedEmbedder:
    """Embeds each distinct text once; with `path`, also across runs (an `.npz` of text hashes and vectors,
    read at start and written by `save`). Vectors are the embedder's own, so results do not change."""

    def __init__(self, embedder: Embedder, path: Path | None = None) -> None:
        self.name, self.dim = embedder.name, embedder.dim
        self.inner = embedder
        """The embedder itself (what a timing measures)."""
        self._path = path
        self._known: dict[str, np.ndarray] = {}
        self._added = 0
        if path is not None and path.exists():
            with np.load(path, allow_pickle=False) as data:
                if str(data["embedder"]) == embedder.name:
                    self._known = dict(zip((str(key) for key in data["keys"]), data["vectors"], strict=True))

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.name}\0{text}".encode()).hexdigest()

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self._key(text) for text in texts]
        missing = {key: text for key, text in zip(keys, texts, strict=True) if key not in self._known}
        if missing:
            vectors = self.inner.embed_batch(list(missing.values()))
            self._known.update(zip(missing, vectors, strict=True))
            self._added += len(missing)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._known[key] for key in keys]).astype(np.float32)

    def save(self) -> None:
        """Write the cache to its path, if it has one and anything was added."""
        if self._path is None or not self._added:
            return
        keys = np.asarray(list(self._known), dtype=np.str_)
        vectors = np.stack(list(self._known.values())).astype(np.float32)
        tmp = self._path.with_suffix(".tmp.npz")
        np.savez(tmp, embedder=np.str_(self.name), keys=keys, vectors=vectors)
        tmp.replace(self._path)
        self._added = 0
