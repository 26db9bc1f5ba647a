"""KV block files: one compiled tool text, its saved sequence state, and a header that proves what it is.

    offset  bytes  field
    0       8      magic b"NXKVBLK\\0"
    8       2      format version (1)
    10      2      reserved (0)
    12      4      header length H: 128 + 4 * token count, rounded up to 64
    16      32     model fingerprint (SHA-256 of the model file's hash and the KV layout)
    48      32     block key (SHA-256 of the preamble and the tool text)
    80      4      anchor position: where the first tool token sat when compiled
    84      4      token count n
    88      8      payload length L
    96      32     checksum: SHA-256 of every other byte of the file
    128     4n     token ids (int32), then zero padding up to H
    H       L      payload: llama.cpp's saved state of the sequence holding the tool text

All integers are little-endian; the file is exactly H + L bytes. Files are written to a temporary name and
renamed, and read through a copy-on-write mmap, so every session splices from the same page-cache pages.
A block that fails any check raises `BlockRejected`: it is never spliced, and the caller prefills the text.
"""

from __future__ import annotations

import hashlib
import logging
import mmap
import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nexus_gateway.errors import BlockRejected

logger = logging.getLogger(__name__)

MAGIC = b"NXKVBLK\0"
VERSION = 1
SUFFIX = ".kvb"
_HEADER = struct.Struct("<8sHHI32s32sIIQ32s")
_CHECKSUM = slice(96, 128)
assert _HEADER.size == 128


def block_key(preamble: str, text: str) -> str:
    """Hex key of a tool text compiled after `preamble`; unchanged text means an unchanged key."""
    return hashlib.sha256(f"nexus-kvb\0{VERSION}\0{preamble}\0{text}".encode()).hexdigest()


def _header_length(n_tokens: int) -> int:
    return -(-(_HEADER.size + 4 * n_tokens) // 64) * 64


@dataclass(frozen=True)
class BlockHeader:
    version: int
    fingerprint: str
    key: str
    anchor: int
    n_tokens: int
    payload_length: int
    header_length: int


def encode_block(fingerprint: str, key: str, anchor: int, tokens: list[int], payload: bytes) -> bytes:
    """The bytes of a block file."""
    header_length = _header_length(len(tokens))
    fields = (
        MAGIC,
        VERSION,
        0,
        header_length,
        bytes.fromhex(fingerprint),
        bytes.fromhex(key),
        anchor,
        len(tokens),
        len(payload),
    )
    token_bytes = np.asarray(tokens, dtype="<i4").tobytes()
    padding = bytes(header_length - _HEADER.size - len(token_bytes))
    unsigned = _HEADER.pack(*fields, bytes(32))
    digest = hashlib.sha256(unsigned[: _CHECKSUM.start])
    for part in (token_bytes, padding, payload):
        digest.update(part)
    return _HEADER.pack(*fields, digest.digest()) + token_bytes + padding + payload


def write_block(path: Path, data: bytes) -> None:
    """Write atomically: a temporary file in the same folder, flushed, then renamed over `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


class Block:
    """A validated block, mapped copy-on-write (llama.cpp only reads it; the pages stay shared)."""

    def __init__(self, path: Path, header: BlockHeader, tokens: tuple[int, ...], mapping: mmap.mmap) -> None:
        self.path = path
        self.header = header
        self.tokens = tokens
        self.buffer = mapping

    @property
    def payload_offset(self) -> int:
        return self.header.header_length

    @property
    def payload_length(self) -> int:
        return self.header.payload_length

    def close(self) -> None:
        self.buffer.close()


def read_header(path: Path, mapping: mmap.mmap | bytes) -> BlockHeader:
    """Parse and sanity-check the fixed header; `BlockRejected` names what is wrong."""
    size = len(mapping)
    if size < _HEADER.size:
        raise BlockRejected(path, f"truncated: {size} bytes, shorter than the {_HEADER.size}-byte header")
    magic, version, _, header_length, fp, key, anchor, n_tokens, payload_length, _ = _HEADER.unpack_from(mapping)
    if magic != MAGIC:
        raise BlockRejected(path, "not a KV block (bad magic)")
    if version != VERSION:
        raise BlockRejected(path, f"format version {version}, this build reads version {VERSION}")
    if n_tokens < 1 or header_length != _header_length(n_tokens):
        raise BlockRejected(path, f"inconsistent header ({n_tokens} tokens, header length {header_length})")
    if size != header_length + payload_length:
        raise BlockRejected(
            path, f"truncated or padded: {size} bytes, the header says {header_length + payload_length}"
        )
    return BlockHeader(VERSION, fp.hex(), key.hex(), anchor, n_tokens, payload_length, header_length)


def _checksum(mapping: mmap.mmap) -> bytes:
    digest = hashlib.sha256()
    with memoryview(mapping) as view:
        digest.update(view[: _CHECKSUM.start])
        digest.update(view[_CHECKSUM.stop :])
    return digest.digest()


def open_block(
    path: Path, *, fingerprint: str, key: str | None = None, tokens: list[int] | None = None, anchor: int | None = None
) -> Block:
    """Map and fully validate a block: header, model fingerprint, key, checksum, then (when given) the
    expected token ids and anchor. Anything off raises `BlockRejected`; nothing is returned half-checked."""
    try:
        with path.open("rb") as file:
            if os.fstat(file.fileno()).st_size == 0:
                raise BlockRejected(path, "empty file")
            mapping = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_COPY)
    except OSError as exc:
        raise BlockRejected(path, f"unreadable ({exc.strerror or exc})") from exc
    try:
        header = read_header(path, mapping)
        if header.fingerprint != fingerprint:
            raise BlockRejected(path, f"compiled for another model or KV layout ({header.fingerprint[:16]})")
        if key is not None and header.key != key:
            raise BlockRejected(path, "holds a different tool text than the one asked for")
        if mapping[_CHECKSUM] != _checksum(mapping):
            raise BlockRejected(path, "checksum mismatch (the file is corrupt)")
        start = _HEADER.size
        stored = tuple(int(t) for t in np.frombuffer(mapping, dtype="<i4", count=header.n_tokens, offset=start))
        if tokens is not None and list(stored) != list(tokens):
            raise BlockRejected(path, "its token ids differ from this model's tokenization of the tool text")
        if anchor is not None and header.anchor != anchor:
            raise BlockRejected(path, f"anchored at position {header.anchor}, the session preamble ends at {anchor}")
    except BaseException:
        mapping.close()
        raise
    return Block(path, header, stored, mapping)
