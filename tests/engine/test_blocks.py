"""The block file format on its own: round trip, and every kind of damage rejected (no model needed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nexus_gateway.engine.blocks import block_key, encode_block, open_block, write_block
from nexus_gateway.errors import BlockRejected

FP = "ab" * 32
OTHER_FP = "cd" * 32
KEY = block_key("preamble", "Tool: x\n")
TOKENS = [5, 17, 123456, 2**31 - 1]
PAYLOAD = bytes(range(256)) * 40


def written(tmp_path: Path, **changes: object) -> Path:
    fields: dict = {"fingerprint": FP, "key": KEY, "anchor": 18, "tokens": TOKENS, "payload": PAYLOAD, **changes}
    path = tmp_path / "block.kvb"
    write_block(path, encode_block(**fields))
    return path


def test_block_round_trips_header_tokens_and_payload(tmp_path: Path):
    block = open_block(written(tmp_path), fingerprint=FP, key=KEY, tokens=TOKENS, anchor=18)
    try:
        assert block.tokens == tuple(TOKENS)
        assert (block.header.anchor, block.header.n_tokens, block.header.fingerprint) == (18, 4, FP)
        assert block.payload_offset % 64 == 0
        assert block.buffer[block.payload_offset : block.payload_offset + block.payload_length] == PAYLOAD
    finally:
        block.close()


def test_block_write_leaves_no_temporary_file_behind(tmp_path: Path):
    written(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["block.kvb"]


@pytest.mark.parametrize("offset", [0, 9, 13, 20, 50, 81, 85, 90, 100, 130, 200, -1, -500])
def test_a_block_with_any_flipped_byte_is_rejected(tmp_path: Path, offset: int):
    path = written(tmp_path)
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(BlockRejected):
        open_block(path, fingerprint=FP, key=KEY, tokens=TOKENS, anchor=18).close()


@pytest.mark.parametrize("size", [0, 10, 127, 200, -1])
def test_a_truncated_block_is_rejected(tmp_path: Path, size: int):
    path = written(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[:size])
    with pytest.raises(BlockRejected, match=r"truncated|empty"):
        open_block(path, fingerprint=FP).close()


def test_a_block_of_another_model_is_rejected_even_when_intact(tmp_path: Path):
    path = written(tmp_path, fingerprint=OTHER_FP)
    with pytest.raises(BlockRejected, match="another model"):
        open_block(path, fingerprint=FP).close()


def test_a_block_for_other_tokens_or_another_anchor_is_rejected(tmp_path: Path):
    path = written(tmp_path)
    with pytest.raises(BlockRejected, match="token ids"):
        open_block(path, fingerprint=FP, tokens=[*TOKENS[:-1], 6]).close()
    with pytest.raises(BlockRejected, match="anchored"):
        open_block(path, fingerprint=FP, anchor=17).close()
    with pytest.raises(BlockRejected, match="different tool text"):
        open_block(path, fingerprint=FP, key=block_key("preamble", "Tool: y\n")).close()


def test_block_key_depends_on_the_preamble_and_the_text():
    keys = {block_key("a", "t"), block_key("b", "t"), block_key("a", "u")}
    assert len(keys) == 3 and block_key("a", "t") == block_key("a", "t")
