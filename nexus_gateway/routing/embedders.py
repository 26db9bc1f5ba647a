"""Embedders: text in, unit vectors out. The semantic index depends on nothing else.

Backends, named by `make_embedder(spec)`:

- `"default"`: all-MiniLM-L6-v2, int8, run by onnxruntime (`_onnx_minilm.py`); works offline from what
  `pip install` brings.
- `"hashing"`: feature hashing of word unigrams and bigrams; no model, deterministic, for tests and as a floor.
- `"gguf:/path/model.gguf"`: any GGUF embedding model (nomic-embed-text, bge, e5...) run by llama.cpp.

Only the engine module imports `llama_cpp`. The GGUF backend therefore takes a loader: a callable that opens the
file and returns an `EmbeddingModel` (anything with `n_embd` and `embed(texts)`). By default it is the engine's
`LlamaEmbedding` (engine/llama.py), imported only when a `gguf:` spec is used; the model's own pooling is used,
or the mean of its hidden states when it declares none.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Protocol

import numpy as np

from nexus_gateway.routing.bm25 import tokenize
from nexus_gateway.routing.specs import embedder_kind


class Embedder(Protocol):
    """Turns texts into float32 rows of shape (len(texts), dim), each of unit L2 norm."""

    name: str
    dim: int

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray: ...


class EmbeddingModel(Protocol):
    """What the llama.cpp engine hands the GGUF backend: an opened embedding model."""

    @property
    def n_embd(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]: ...


GGUFLoader = Callable[[Path], EmbeddingModel]


class HashingEmbedder:
    """Signed feature hashing of stemmed word unigrams and bigrams, sublinear counts, L2-normalized.

    Stable across processes and platforms (CRC-32, not Python's salted `hash`). It knows no synonyms: it ranks
    like a bag-of-words retriever, which makes it a predictable stand-in for a model in tests.
    """

    name = "hashing"

    def __init__(self, dim: int = 1024) -> None:
        if dim <= 0 or dim & (dim - 1):
            raise ValueError(f"HashingEmbedder dim must be a power of two, got {dim}")
        self.dim = dim

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, count in _features(text).items():
                code = zlib.crc32(feature.encode("utf-8"))
                sign = 1.0 if code & 0x80000000 else -1.0
                out[row, code & (self.dim - 1)] += sign * (1.0 + math.log(count))
        return _normalize_rows(out)


def _features(text: str) -> Counter[str]:
    words = tokenize(text)
    features = Counter(words)
    features.update(f"{first} {second}" for first, second in pairwise(words))
    # A text without words still gets a unit vector: the same one for every such text.
    return features or Counter({"\x00empty": 1})


class LlamaCppEmbedder:
    """A GGUF embedding model run by llama.cpp, reached through the engine's `EmbeddingModel`."""

    def __init__(self, model: EmbeddingModel, name: str, *, batch_size: int = 16) -> None:
        self._model = model
        self.name = name
        self.dim = model.n_embd
        self._batch_size = batch_size

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), self._batch_size):
            chunk = texts[start : start + self._batch_size]
            vectors = np.asarray(self._model.embed(chunk), dtype=np.float32)
            if vectors.shape != (len(chunk), self.dim):
                raise ValueError(
                    f"Embedding model {self.name} returned shape {vectors.shape} for {len(chunk)} texts; "
                    f"expected ({len(chunk)}, {self.dim}). Is it an embedding model with pooling enabled?"
                )
            out[start : start + len(chunk)] = vectors
        return _normalize_rows(out)


def make_embedder(spec: str | None, *, gguf_loader: GGUFLoader | None = None) -> Embedder:
    """Build the embedder a config names: None or "default", "hashing", or "gguf:/path/model.gguf"."""
    return embedder_factory(spec, gguf_loader=gguf_loader)()


def embedder_factory(spec: str | None, *, gguf_loader: GGUFLoader | None = None) -> Callable[[], Embedder]:
    """Check an embedder spec (specs.py) and return what builds it, loading nothing yet."""
    kind, path = embedder_kind(spec)
    if kind == "default":
        from nexus_gateway.routing._onnx_minilm import MiniLMEmbedder

        return MiniLMEmbedder
    if kind == "hashing":
        return HashingEmbedder
    assert path is not None

    def build() -> Embedder:
        loader = gguf_loader
        if loader is None:
            from nexus_gateway.engine.llama import LlamaEmbedding  # llama.cpp loads only here

            loader = LlamaEmbedding
        return LlamaCppEmbedder(loader(path), name=f"gguf:{path.name}")

    return build


def _normalize_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0.0, 1.0, norms)
