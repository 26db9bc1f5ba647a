"""Per-head key statistics read out of a block's payload, for the drift-proxy test, and rank correlation.

llama.cpp writes a sequence's state as, per cache (the sliding-window and full-attention caches of models
like Gemma 3 are two), some cell metadata and then one record per layer: `int32 type, uint64 row bytes,
rows`, keys first, then values (not transposed under flash attention). The layout is llama.cpp's and may
change; this reader finds the records by their headers and returns None when they do not add up, so the
benchmark reports the proxy as unavailable rather than wrong.
"""

from __future__ import annotations

import struct

import numpy as np

_F16 = 1
_RECORD = struct.Struct("<iQ")


def _chains(payload: bytes, n_tokens: int) -> list[list[tuple[int, int]]]:
    """Runs of consecutive f16 layer records, as (data offset, row bytes)."""
    chains: list[list[tuple[int, int]]] = []
    position = 0
    marker = _F16.to_bytes(4, "little")
    while (found := payload.find(marker, position)) != -1 and found + _RECORD.size <= len(payload):
        _, row = _RECORD.unpack_from(payload, found)
        chain: list[tuple[int, int]] = []
        cursor = found
        while 0 < row <= 1 << 20 and row % 2 == 0 and cursor + _RECORD.size + n_tokens * row <= len(payload):
            kind, size = _RECORD.unpack_from(payload, cursor)
            if kind != _F16 or size != row:
                break
            chain.append((cursor + _RECORD.size, row))
            cursor += _RECORD.size + n_tokens * row
            if cursor + _RECORD.size > len(payload):
                break
        if len(chain) >= 2 and len(chain) % 2 == 0:
            chains.append(chain)
            position = cursor
        else:
            position = found + 1
    return chains


def key_variance(payload: bytes, n_tokens: int, n_layer: int, n_head_kv: int) -> np.ndarray | None:
    """Variance of each (layer, KV head)'s keys over the block's tokens and head dimensions, or None."""
    keys: list[np.ndarray] = []
    for chain in _chains(payload, n_tokens):
        for offset, row in chain[: len(chain) // 2]:
            data = np.frombuffer(payload, dtype="<f2", count=n_tokens * row // 2, offset=offset)
            keys.append(data.astype(np.float32).reshape(n_tokens, n_head_kv, -1))
    if len(keys) != n_layer:
        return None
    return np.array([[float(layer[:, head, :].var()) for head in range(n_head_kv)] for layer in keys])


def spearman(a: list[float], b: list[float]) -> float | None:
    """Spearman rank correlation (average ranks for ties); None when either side is constant."""
    if len(a) != len(b) or len(a) < 3:
        return None

    def ranks(values: list[float]) -> np.ndarray:
        array = np.asarray(values, dtype=np.float64)
        order = np.argsort(array, kind="mergesort")
        result = np.empty(len(array))
        result[order] = np.arange(1, len(array) + 1)
        for value in np.unique(array):
            tied = array == value
            result[tied] = result[tied].mean()
        return result

    ra, rb = ranks(a), ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return None
    return float(np.corrcoef(ra, rb)[0, 1])
