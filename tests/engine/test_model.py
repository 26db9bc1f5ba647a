"""Default model resolution, checksums and the fingerprint blocks are filed under."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from nexus_gateway.engine.llama import ContextSettings
from nexus_gateway.engine.model import fingerprint, resolve_model, sha256_file
from nexus_gateway.engine.models import MODELS
from nexus_gateway.errors import EngineError


def test_the_former_default_gemma_stays_selectable_by_name_and_matches_its_checksum(tmp_path: Path):
    model = resolve_model("gemma3-270m", hash_cache=tmp_path / "hashes.json")
    assert model.label == "gemma3-270m" and model.path.is_file()
    assert model.sha256 == MODELS["gemma3-270m"].sha256 == sha256_file(model.path)


def test_a_changed_file_gets_a_new_hash(tmp_path: Path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF one")
    cache = tmp_path / "hashes.json"
    first = resolve_model(gguf, hash_cache=cache).sha256
    gguf.write_bytes(b"GGUF two!")
    second = resolve_model(gguf, hash_cache=cache).sha256
    assert second != first and second == sha256_file(gguf)


def test_a_missing_model_file_is_a_user_error_that_names_it(tmp_path: Path):
    with pytest.raises(EngineError, match="model file not found"):
        resolve_model(tmp_path / "nope.gguf")


def test_fingerprint_changes_with_the_model_and_with_the_kv_layout(tmp_path: Path):
    model = resolve_model(None, hash_cache=tmp_path / "hashes.json")
    f16, q8 = ContextSettings().kv_layout(), ContextSettings(kv_type="q8_0").kv_layout()
    other = replace(model, sha256="0" * 64)
    prints = {fingerprint(model, f16), fingerprint(model, q8), fingerprint(other, f16)}
    assert len(prints) == 3 and fingerprint(model, f16) == fingerprint(model, f16)
