"""The `compiled_schemas/` folder: one sub-folder per model fingerprint, one block file per tool text.

    compiled_schemas/
        README.md                          the block format (written by the compiler)
        <fingerprint[:16]>/
            <block key[:32]>.kvb           one tool text, compiled after the session preamble
            splice_policy.json             P, D and the recompute curve calibrated for this model

Validated blocks stay mapped; a file whose inode, size or mtime changed is validated again before use.
"""

from __future__ import annotations

import logging
from pathlib import Path

from nexus_gateway.engine.blocks import SUFFIX, VERSION, Block, encode_block, open_block, write_block

logger = logging.getLogger(__name__)

_README = f"""# compiled_schemas

KV blocks written by `nexus-gateway compile`: each `.kvb` file is one tool's text, decoded once by the
local model right after the session preamble, with the model's keys and values for those tokens. At run
time a block is restored into a scratch sequence, shifted to where the tool text goes, and copied into
the session, instead of decoding the text again.

Folders are named by the model fingerprint (SHA-256 of the GGUF's hash and the KV cache layout), files by
the block key (SHA-256 of the preamble and the tool text). `splice_policy.json` beside the blocks holds
the splice thresholds P and D and the recompute curve calibrated by `nexus-gateway calibrate splice`.

## Block format, version {VERSION}

All integers little-endian; the file is exactly H + L bytes.

| offset | bytes | field |
|-------:|------:|-------|
| 0   | 8  | magic `NXKVBLK\\0` |
| 8   | 2  | format version |
| 10  | 2  | reserved, 0 |
| 12  | 4  | header length H = 128 + 4 n, rounded up to 64 |
| 16  | 32 | model fingerprint |
| 48  | 32 | block key |
| 80  | 4  | anchor position (position of the first tool token when compiled) |
| 84  | 4  | token count n |
| 88  | 8  | payload length L |
| 96  | 32 | checksum: SHA-256 of every other byte of the file |
| 128 | 4n | token ids (int32), zero padding up to H |
| H   | L  | payload: llama.cpp sequence state (`llama_state_seq_get_data`) |

A block whose magic, version, length, fingerprint, key, checksum, token ids or anchor do not match is
never spliced: the gateway logs why and decodes the tool text instead. Deleting this folder is always safe.
"""


def _stamp(path: Path) -> tuple[int, int, int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


class BlockStore:
    """Blocks of one model fingerprint under `root`."""

    def __init__(self, root: Path, fingerprint: str) -> None:
        self.root = root
        self.fingerprint = fingerprint
        self.directory = root / fingerprint[:16]
        self._open: dict[Path, tuple[tuple[int, int, int, int], Block]] = {}

    def path_for(self, key: str) -> Path:
        return self.directory / f"{key[:32]}{SUFFIX}"

    def write(self, key: str, anchor: int, tokens: list[int], payload: bytes) -> Path:
        path = self.path_for(key)
        write_block(path, encode_block(self.fingerprint, key, anchor, tokens, payload))
        self._forget(path)
        readme = self.root / "README.md"
        if not readme.exists() or readme.read_text(encoding="utf-8") != _README:
            readme.write_text(_README, encoding="utf-8")
        return path

    def get(self, key: str, *, tokens: list[int] | None = None, anchor: int | None = None) -> Block | None:
        """The validated block for `key`, None when it was never compiled; `BlockRejected` when it is bad."""
        path = self.path_for(key)
        stamp = _stamp(path)
        if stamp is None:
            self._forget(path)
            return None
        cached = self._open.get(path)
        if cached is not None and cached[0] == stamp:
            block = cached[1]
            if (tokens is None or list(block.tokens) == list(tokens)) and (
                anchor is None or block.header.anchor == anchor
            ):
                return block
        self._forget(path)
        block = open_block(path, fingerprint=self.fingerprint, key=key, tokens=tokens, anchor=anchor)
        self._open[path] = (stamp, block)
        return block

    def _forget(self, path: Path) -> None:
        entry = self._open.pop(path, None)
        if entry is not None:
            entry[1].close()

    def close(self) -> None:
        for path in list(self._open):
            self._forget(path)
