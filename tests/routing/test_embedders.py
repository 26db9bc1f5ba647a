import socket
import subprocess
import sys
from collections.abc import Sequence

import numpy as np
import pytest

from nexus_gateway.engine.model import resolve_model
from nexus_gateway.errors import ConfigError, EngineError
from nexus_gateway.routing.embedders import Embedder, HashingEmbedder, LlamaCppEmbedder, make_embedder

TOOLS = [
    "send email. Send an email message to a recipient. Parameters: to, subject, body.",
    "get weather forecast. Weather forecast for a city for the coming days. Parameters: city, days.",
    "create calendar event. Create an event in the user's calendar. Parameters: title, start, attendees.",
    "list directory. List the files and folders inside a directory. Parameters: path.",
    "convert currency. Convert an amount of money between two currencies. Parameters: amount, from, to.",
]


@pytest.fixture(scope="module")
def default_embedder() -> Embedder:
    return make_embedder(None)


def assert_unit_rows(vectors: np.ndarray, rows: int, dim: int) -> None:
    assert vectors.dtype == np.float32
    assert vectors.shape == (rows, dim)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_default_embedder_loads_and_embeds_with_the_network_blocked(monkeypatch: pytest.MonkeyPatch):
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the default embedder tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    embedder = make_embedder("default")
    assert_unit_rows(embedder.embed_batch(["hello world"]), 1, embedder.dim)


def test_default_embedder_returns_unit_float32_rows_of_its_dimension(default_embedder: Embedder):
    assert default_embedder.dim == 384
    assert_unit_rows(default_embedder.embed_batch(TOOLS), len(TOOLS), 384)
    assert default_embedder.embed_batch([]).shape == (0, 384)


def test_default_embedder_ranks_the_relevant_tool_first_without_shared_words(default_embedder: Embedder):
    tools = default_embedder.embed_batch(TOOLS)
    queries = ["will it rain in Paris tomorrow", "mail my boss the quarterly report", "how many yen is 50 dollars"]
    best = (default_embedder.embed_batch(queries) @ tools.T).argmax(axis=1)
    assert [TOOLS[i].split(".")[0] for i in best] == ["get weather forecast", "send email", "convert currency"]


def test_default_embedder_gives_a_text_the_same_vector_alone_or_in_a_batch(default_embedder: Embedder):
    alone = default_embedder.embed_batch([TOOLS[1]])[0]
    batched = default_embedder.embed_batch(TOOLS)[1]
    np.testing.assert_allclose(alone, batched, atol=1e-5)


def test_hashing_embedder_is_deterministic_across_instances_and_processes():
    texts = ["Create a calendar event", "getCurrentWeather for a city", ""]
    first = HashingEmbedder().embed_batch(texts)
    np.testing.assert_array_equal(first, HashingEmbedder().embed_batch(texts))
    code = (
        "from nexus_gateway.routing.embedders import HashingEmbedder; import sys; "
        f"sys.stdout.write(HashingEmbedder().embed_batch({texts!r}).tobytes().hex())"
    )
    for seed in ("1", "2"):
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONHASHSEED": seed}
        )
        assert bytes.fromhex(result.stdout) == first.tobytes()


def test_hashing_embedder_returns_unit_rows_even_for_texts_without_words():
    vectors = HashingEmbedder(dim=256).embed_batch(["", "the of and", "weather in Paris"])
    assert_unit_rows(vectors, 3, 256)


def test_hashing_embedder_scores_shared_words_and_word_order():
    embedder = HashingEmbedder()
    query, same_words, other = embedder.embed_batch(["weather forecast", "forecast of the weather", "send email"])
    assert query @ same_words > 0.5 > abs(query @ other)


class FakeEmbeddingModel:
    def __init__(self, width: int = 4) -> None:
        self.n_embd = 3
        self.width = width
        self.calls: list[int] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        return [[float(len(text)), 1.0, 0.0][: self.n_embd] for text in texts]


def test_gguf_spec_uses_the_engine_loader_and_normalizes_its_vectors(tmp_path):
    model_file = tmp_path / "nomic-embed.gguf"
    model_file.write_bytes(b"GGUF")
    model = FakeEmbeddingModel()
    embedder = make_embedder(f"gguf:{model_file}", gguf_loader=lambda path: model)
    assert embedder.name == "gguf:nomic-embed.gguf"
    assert_unit_rows(embedder.embed_batch(["a"] * 20), 20, 3)
    assert model.calls == [16, 4]


def test_gguf_model_that_returns_the_wrong_shape_is_an_error():
    class Broken(FakeEmbeddingModel):
        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            return [[1.0, 2.0]]

    with pytest.raises(ValueError, match="pooling"):
        LlamaCppEmbedder(Broken(), name="broken").embed_batch(["a", "b"])


def test_a_gguf_spec_naming_no_model_file_and_unknown_specs_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="no GGUF file"):
        make_embedder(f"gguf:{tmp_path / 'missing.gguf'}", gguf_loader=lambda path: FakeEmbeddingModel())
    with pytest.raises(ConfigError, match="Unknown embedder"):
        make_embedder("word2vec")
    assert isinstance(make_embedder("hashing"), HashingEmbedder)


def test_a_gguf_spec_loads_the_model_with_the_engine_and_embeds_unit_vectors():
    """The default model (Qwen2.5-Coder 0.5B, 896 wide) is a chat model: it declares no pooling, so its hidden
    states are averaged."""
    path = resolve_model(None).path
    embedder = make_embedder(f"gguf:{path}")
    vectors = embedder.embed_batch(TOOLS[:2])
    assert embedder.name == f"gguf:{path.name}"
    assert_unit_rows(vectors, 2, embedder.dim)
    assert embedder.dim == 896 and not np.allclose(vectors[0], vectors[1])


def test_a_file_llama_cpp_cannot_load_is_an_engine_error(tmp_path):
    model_file = tmp_path / "model.gguf"
    model_file.write_bytes(b"GGUF")
    with pytest.raises(EngineError, match="could not load"):
        make_embedder(f"gguf:{model_file}")
