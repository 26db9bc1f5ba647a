"""The compiled_schemas folder on its own: blocks filed per model fingerprint, validated, re-validated when
their file changes (no model needed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nexus_gateway.engine.blocks import block_key
from nexus_gateway.engine.store import BlockStore
from nexus_gateway.errors import BlockRejected

FP = "ab" * 32
KEY = block_key("preamble", "Tool: get_weather\n")
TOKENS = [11, 22, 33]
PAYLOAD = b"kv-state" * 64


def test_a_written_block_is_filed_under_the_fingerprint_and_reads_back(tmp_path: Path):
    store = BlockStore(tmp_path, FP)
    path = store.write(KEY, 7, TOKENS, PAYLOAD)
    assert path == tmp_path / FP[:16] / f"{KEY[:32]}.kvb"
    block = store.get(KEY, tokens=TOKENS, anchor=7)
    assert block is not None and block.tokens == tuple(TOKENS) and block.header.anchor == 7
    assert bytes(block.buffer[block.payload_offset : block.payload_offset + block.payload_length]) == PAYLOAD
    store.close()


def test_writing_a_block_documents_the_format_in_a_readme(tmp_path: Path):
    BlockStore(tmp_path, FP).write(KEY, 7, TOKENS, PAYLOAD)
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert "Block format, version 1" in readme and "NXKVBLK" in readme


def test_a_tool_never_compiled_has_no_block(tmp_path: Path):
    assert BlockStore(tmp_path, FP).get(KEY) is None


def test_an_unchanged_block_is_served_from_the_open_mapping(tmp_path: Path):
    store = BlockStore(tmp_path, FP)
    store.write(KEY, 7, TOKENS, PAYLOAD)
    first = store.get(KEY)
    assert first is not None and store.get(KEY, tokens=TOKENS, anchor=7) is first
    store.close()


def test_a_block_changed_on_disk_is_validated_again_and_rejected(tmp_path: Path):
    store = BlockStore(tmp_path, FP)
    path = store.write(KEY, 7, TOKENS, PAYLOAD)
    assert store.get(KEY) is not None
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(1, 1))  # a new stamp even on a coarse-mtime filesystem
    with pytest.raises(BlockRejected, match="checksum"):
        store.get(KEY)
    store.close()


def test_a_cached_block_asked_for_with_other_tokens_or_anchor_is_rejected(tmp_path: Path):
    store = BlockStore(tmp_path, FP)
    store.write(KEY, 7, TOKENS, PAYLOAD)
    assert store.get(KEY) is not None
    with pytest.raises(BlockRejected, match="token ids"):
        store.get(KEY, tokens=[11, 22, 34])
    with pytest.raises(BlockRejected, match="anchored at position 7"):
        store.get(KEY, anchor=8)
    store.close()


def test_a_block_of_another_model_fingerprint_is_not_found_under_this_one(tmp_path: Path):
    BlockStore(tmp_path, "cd" * 32).write(KEY, 7, TOKENS, PAYLOAD)
    assert BlockStore(tmp_path, FP).get(KEY) is None


def test_a_block_deleted_after_use_is_no_longer_found(tmp_path: Path):
    store = BlockStore(tmp_path, FP)
    path = store.write(KEY, 7, TOKENS, PAYLOAD)
    assert store.get(KEY) is not None
    path.unlink()
    assert store.get(KEY) is None
    store.close()
