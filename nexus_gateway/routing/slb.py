"""The semantic lookaside buffer: one INT8 vector per tool in one dense matrix, scanned in one call.

Each tool's embedding is quantized per vector (int8 codes and one float scale), which is what is kept
and persisted: 4x smaller than float32, and a restart re-embeds nothing. The scan works on the
dequantized matrix (codes x scale, cached as float32): one single-threaded BLAS matrix-vector product
gives every tool's score. Above `FAISS_ABOVE` tools a faiss flat index answers top-k instead: measured
with `nexus-gateway bench routing` (384 dims, one thread), numpy is faster up to a few thousand tools
(250: 4.8 us against 10 us) and faiss above (10,000: 0.34 ms against 1.26 ms).
"""

from __future__ import annotations

import hashlib
import io
import logging
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nexus_gateway.routing.embedders import Embedder
from nexus_gateway.runtime.statefile import StateInvalid, move_aside, save_bytes

logger = logging.getLogger(__name__)

_FORMAT = 2
FAISS_ABOVE = 4096


_blas_limited = False


def _limit_blas_threads() -> None:
    """One BLAS thread: a scan is one small matrix-vector product, and on a busy machine BLAS worker
    threads turn microseconds into milliseconds (measured: 1000 tools, 23 us on one thread, up to 8 ms on two)."""
    global _blas_limited
    if not _blas_limited:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=1, user_api="blas")
        _blas_limited = True


def quantize(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-vector symmetric INT8: codes in [-127, 127] and one scale per row."""
    vectors = np.asarray(vectors, dtype=np.float32)
    peak = np.abs(vectors).max(axis=1) if len(vectors) else np.zeros(0, dtype=np.float32)
    scales = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.clip(np.rint(vectors / scales[:, None]), -127, 127).astype(np.int8)
    return codes, scales


def text_hash(text: str, embedder_name: str) -> str:
    return hashlib.sha256(f"{embedder_name}\0{text}".encode()).hexdigest()[:16]


class SemanticLookasideBuffer:
    def __init__(self, embedder: Embedder) -> None:
        _limit_blas_threads()
        self.embedder = embedder
        self.names: list[str] = []
        self.hashes: list[str] = []
        self.codes = np.zeros((0, embedder.dim), dtype=np.int8)
        self.scales = np.zeros(0, dtype=np.float32)
        self._matrix = np.zeros((0, embedder.dim), dtype=np.float32)
        self._faiss: Any = None
        self.embedded_last_sync = 0
        self._known: dict[str, tuple[np.ndarray, float]] = {}
        """Every vector this buffer has held, by text hash (what `save` persists)."""

    def __len__(self) -> int:
        return len(self.names)

    def fork(self) -> SemanticLookasideBuffer:
        """A buffer with the same vectors, to sync while this one keeps serving scans."""
        twin = SemanticLookasideBuffer(self.embedder)
        twin.names, twin.hashes, twin.codes, twin.scales = self.names, self.hashes, self.codes, self.scales
        twin._known = dict(self._known)
        twin._matrix, twin._faiss = self._matrix, self._faiss  # read-only; `sync` builds fresh ones
        return twin

    def sync(self, names: Sequence[str], texts: Sequence[str]) -> None:
        """Make the buffer hold exactly these tools, embedding only texts it has never seen.

        Vectors are remembered by text hash even after their tool leaves the buffer, so upstreams that
        reconnect, or connect in another order after a restart, are not embedded again.
        """
        hashes = [text_hash(text, self.embedder.name) for text in texts]
        missing = self.missing(texts)
        self.learn([texts[i] for i in missing])
        codes = np.zeros((len(names), self.embedder.dim), dtype=np.int8)
        scales = np.zeros(len(names), dtype=np.float32)
        for i, digest in enumerate(hashes):
            codes[i], scales[i] = self._known[digest]
        self.embedded_last_sync = len(missing)
        self.names, self.hashes, self.codes, self.scales = list(names), hashes, codes, scales
        self._rebuild()

    def missing(self, texts: Sequence[str]) -> list[int]:
        """Positions of the texts this buffer has no vector for (what a `sync` would embed)."""
        return [i for i, text in enumerate(texts) if text_hash(text, self.embedder.name) not in self._known]

    def digest(self, text: str) -> str:
        """The key of `text`'s vector (its hash with the embedder's name)."""
        return text_hash(text, self.embedder.name)

    def blobs_of(self, digests: Sequence[str]) -> dict[str, bytes]:
        """Known vectors as bytes (float32 scale, then the int8 codes), by digest: what replicas share."""
        return {
            digest: np.float32(scale).tobytes() + code.tobytes()
            for digest in digests
            if (known := self._known.get(digest)) is not None
            for code, scale in [known]
        }

    def adopt(self, blobs: Mapping[str, bytes | None]) -> int:
        """Remember vectors another replica embedded (`blobs_of`'s form); one of the wrong size is skipped
        with a warning. Returns how many were taken."""
        taken = 0
        for digest, blob in blobs.items():
            if blob is None or digest in self._known:
                continue
            if len(blob) != 4 + self.embedder.dim:
                logger.warning(
                    "shared vector %s has %d bytes, not %d; embedding it here", digest, len(blob), 4 + self.embedder.dim
                )
                continue
            scale = float(np.frombuffer(blob[:4], dtype=np.float32)[0])
            if not np.isfinite(scale) or scale <= 0:
                logger.warning("shared vector %s has a bad scale; embedding it here", digest)
                continue
            self._known[digest] = (np.frombuffer(blob[4:], dtype=np.int8).copy(), scale)
            taken += 1
        return taken

    def learn(self, texts: Sequence[str]) -> None:
        """Embed texts and remember their vectors, without changing which tools the buffer holds."""
        if texts:
            new_codes, new_scales = quantize(self.embedder.embed_batch(texts))
            for text, code, scale in zip(texts, new_codes, new_scales, strict=True):
                self._known[text_hash(text, self.embedder.name)] = (code, float(scale))

    def _rebuild(self) -> None:
        self._matrix = np.ascontiguousarray(self.codes.astype(np.float32) * self.scales[:, None])
        self._faiss = None
        if len(self.names) > FAISS_ABOVE:
            import faiss

            faiss.omp_set_num_threads(1)
            self._faiss = faiss.IndexFlatIP(self.embedder.dim)
            self._faiss.add(self._matrix)

    @property
    def large(self) -> bool:
        """Whether `top` answers from faiss (and a full `scan` should be avoided)."""
        return self._faiss is not None

    @property
    def matrix(self) -> np.ndarray:
        """The dequantized vectors (float32, one row a tool, buffer order) that `scan` multiplies; read-only."""
        return self._matrix

    def subset(self, rows: Sequence[int]) -> SemanticLookasideBuffer:
        """A buffer of some of these tools only (their vectors as they are: nothing is embedded again)."""
        part = SemanticLookasideBuffer(self.embedder)
        chosen = np.asarray(rows, dtype=np.int64)
        part.names, part.hashes = [self.names[i] for i in chosen], [self.hashes[i] for i in chosen]
        part.codes, part.scales = self.codes[chosen], self.scales[chosen]
        part._rebuild()
        return part

    def top(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(indices, scores) of the k best tools, best first."""
        k = min(k, len(self.names))
        if self._faiss is not None:
            scores, ids = self._faiss.search(query[None, :].astype(np.float32), k)
            return ids[0].astype(np.int64), scores[0]
        scores = self.scan(query)
        best = np.argpartition(-scores, k - 1)[:k] if k else np.zeros(0, dtype=np.int64)
        best = best[np.argsort(-scores[best], kind="stable")]
        return best, scores[best]

    def scores_of(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Exact scores of some tools only."""
        scores: np.ndarray = self._matrix[rows] @ query
        return scores

    def scan(self, query: np.ndarray) -> np.ndarray:
        """Inner product of `query` (a unit vector) with every tool vector, in buffer order."""
        scores: np.ndarray = self._matrix @ query
        return scores

    def embed_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embedder.embed_batch([text])[0]
        return vector

    # -- persistence ---------------------------------------------------------------------------

    def save(self, path: Path) -> bool:
        """Write the buffer to `path` atomically; False (and a warning) when it cannot be written."""
        buffer = io.BytesIO()
        np.savez(
            buffer,
            format=np.int32(_FORMAT),
            embedder=np.str_(self.embedder.name),
            names=np.asarray(self.names, dtype=np.str_),
            hashes=np.asarray(self.hashes, dtype=np.str_),
            codes=self.codes,
            scales=self.scales,
            known_hashes=np.asarray(list(self._known), dtype=np.str_),
            known_codes=np.asarray([code for code, _ in self._known.values()], dtype=np.int8).reshape(
                -1, self.embedder.dim
            ),
            known_scales=np.asarray([scale for _, scale in self._known.values()], dtype=np.float32),
        )
        return save_bytes(path, buffer.getvalue())

    def load(self, path: Path) -> bool:
        """Load a saved buffer if it was made by the same embedder; False (and nothing loaded) otherwise.
        A file that is not a whole, consistent index is moved aside (`statefile.move_aside`) to be rebuilt."""
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return False
        except OSError as exc:
            logger.warning("could not read index %s: %s", path, exc)
            return False
        try:
            with np.load(io.BytesIO(raw), allow_pickle=False) as data:
                loaded = _read_index(data, self.embedder)
        except (OSError, ValueError, TypeError, KeyError, IndexError, EOFError, zipfile.BadZipFile) as exc:
            move_aside(path, f"{type(exc).__name__}: {exc}"[:200])  # StateInvalid is a ValueError
            return False
        if loaded is None:
            logger.info("index %s was made by another embedder or format; rebuilding it", path)
            return False
        names, hashes, codes, scales, known = loaded
        self.names, self.hashes, self.codes, self.scales = names, hashes, codes, scales
        known.update((digest, (code, float(scale))) for digest, code, scale in zip(hashes, codes, scales, strict=True))
        self._known = known
        self._rebuild()
        return True


_Loaded = tuple[list[str], list[str], np.ndarray, np.ndarray, dict[str, tuple[np.ndarray, float]]]


def _read_index(data: Any, embedder: Embedder) -> _Loaded | None:
    """The arrays of a saved index, checked for shape and type; None when another embedder or format made it."""
    fmt, name = data["format"], data["embedder"]
    if fmt.shape != () or fmt.dtype.kind not in "iu" or name.shape != () or name.dtype.kind != "U":
        raise StateInvalid("format or embedder is not a scalar of the right type")
    if int(fmt) != _FORMAT or str(name) != embedder.name:
        return None
    names, hashes, known_hashes = _strings(data, "names"), _strings(data, "hashes"), _strings(data, "known_hashes")
    codes, known_codes = _codes(data, "codes", embedder.dim), _codes(data, "known_codes", embedder.dim)
    scales, known_scales = _scales(data, "scales"), _scales(data, "known_scales")
    if not len(names) == len(hashes) == len(codes) == len(scales):
        raise StateInvalid(f"{len(names)} names, {len(hashes)} hashes, {len(codes)} codes, {len(scales)} scales")
    if not len(known_hashes) == len(known_codes) == len(known_scales):
        raise StateInvalid(f"{len(known_hashes)} known hashes, {len(known_codes)} codes, {len(known_scales)} scales")
    rows = zip(known_hashes, known_codes, known_scales, strict=True)
    known = {str(digest): (code, float(scale)) for digest, code, scale in rows}
    return [str(n) for n in names], [str(h) for h in hashes], codes, scales, known


def _strings(data: Any, key: str) -> np.ndarray:
    array: np.ndarray = data[key]  # np.load gives Any
    if array.ndim != 1 or (len(array) and array.dtype.kind != "U"):
        raise StateInvalid(f"{key} is not a list of strings")
    return array


def _codes(data: Any, key: str, dim: int) -> np.ndarray:
    array: np.ndarray = data[key]  # np.load gives Any
    if array.dtype != np.int8 or array.ndim != 2 or array.shape[1] != dim:
        raise StateInvalid(f"{key} is {array.dtype}{list(array.shape)}, not int8[n, {dim}]")
    return array


def _scales(data: Any, key: str) -> np.ndarray:
    array: np.ndarray = data[key]  # np.load gives Any
    if array.dtype != np.float32 or array.ndim != 1 or not np.isfinite(array).all():
        raise StateInvalid(f"{key} is not a list of finite float32")
    return array
