from pathlib import Path

import numpy as np

from nexus_gateway.routing.embedders import make_embedder
from nexus_gateway.routing.slb import SemanticLookasideBuffer, quantize

TEXTS = {
    "weather__forecast": "weather forecast for a city for the next days",
    "calendar__create_event": "create a calendar event with attendees at a time",
    "notes__search": "full text search over notes",
}


class CountingEmbedder:
    """The hashing embedder, counting what it is asked to embed."""

    def __init__(self) -> None:
        self.inner = make_embedder("hashing")
        self.name, self.dim = self.inner.name, self.inner.dim
        self.embedded: list[str] = []

    def embed_batch(self, texts):  # type: ignore[no-untyped-def]
        self.embedded.extend(texts)
        return self.inner.embed_batch(texts)


def test_quantization_keeps_cosine_within_a_percent():
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((50, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    codes, scales = quantize(vectors)
    assert codes.dtype == np.int8 and codes.min() >= -127
    restored = codes.astype(np.float32) * scales[:, None]
    query = vectors[0]
    assert np.max(np.abs(restored @ query - vectors @ query)) < 0.01


def test_scan_ranks_the_matching_tool_first():
    slb = SemanticLookasideBuffer(make_embedder("hashing"))
    slb.sync(list(TEXTS), list(TEXTS.values()))
    scores = slb.scan(slb.embed_query("weather forecast in Oslo"))
    assert slb.names[int(np.argmax(scores))] == "weather__forecast"


def test_sync_embeds_only_new_or_changed_tools():
    embedder = CountingEmbedder()
    slb = SemanticLookasideBuffer(embedder)
    slb.sync(list(TEXTS), list(TEXTS.values()))
    assert len(embedder.embedded) == 3
    changed = dict(TEXTS, notes__search="search notes by tag", issues__create="open an issue")
    slb.sync(list(changed), list(changed.values()))
    assert embedder.embedded[3:] == ["search notes by tag", "open an issue"] and slb.embedded_last_sync == 2
    slb.sync(["weather__forecast"], [TEXTS["weather__forecast"]])
    assert len(slb) == 1 and slb.embedded_last_sync == 0


def _saved_index(path: Path) -> SemanticLookasideBuffer:
    """An index of TEXTS by the hashing embedder, saved at `path`."""
    slb = SemanticLookasideBuffer(make_embedder("hashing"))
    slb.sync(list(TEXTS), list(TEXTS.values()))
    slb.save(path)
    return slb


def test_a_restart_loads_the_index_and_re_embeds_nothing(tmp_path: Path):
    path = tmp_path / "index.npz"
    first = _saved_index(path)
    embedder = CountingEmbedder()
    second = SemanticLookasideBuffer(embedder)
    assert second.load(path)
    second.sync(list(TEXTS), list(TEXTS.values()))
    assert embedder.embedded == []
    np.testing.assert_array_equal(second.codes, first.codes)


def test_an_index_from_another_embedder_or_a_corrupt_file_is_not_loaded(tmp_path: Path):
    path = tmp_path / "index.npz"
    _saved_index(path)
    other = CountingEmbedder()
    other.name = "another-model"
    assert not SemanticLookasideBuffer(other).load(path)
    assert path.exists()  # not corrupt, only not ours: left for the rebuild to overwrite
    path.write_bytes(path.read_bytes()[:100])
    fresh = SemanticLookasideBuffer(make_embedder("hashing"))
    assert not fresh.load(path) and len(fresh) == 0
    assert not path.exists() and len(list(tmp_path.glob("index.npz.corrupt-*"))) == 1


def test_ten_thousand_tools_fit_in_one_matrix():
    embedder = make_embedder("hashing")
    slb = SemanticLookasideBuffer(embedder)
    names = [f"tool_{i}" for i in range(10_000)]
    slb.sync(names, [f"tool number {i} handles topic {i % 113} and object {i % 37}" for i in range(10_000)])
    assert slb.codes.shape == (10_000, embedder.dim) and slb.codes.nbytes == 10_000 * embedder.dim
    scores = slb.scan(slb.embed_query("tool number 4242 handles topic 59 and object 24"))
    assert slb.names[int(np.argmax(scores))] == "tool_4242"


def test_vectors_are_remembered_when_tools_come_and_go(tmp_path: Path):
    """Upstreams connect one at a time: a tool that leaves and comes back is not embedded again."""
    embedder = CountingEmbedder()
    slb = SemanticLookasideBuffer(embedder)
    slb.sync(list(TEXTS), list(TEXTS.values()))
    slb.sync(["notes__search"], [TEXTS["notes__search"]])
    slb.save(tmp_path / "index.npz")
    restarted = SemanticLookasideBuffer(embedder)
    assert restarted.load(tmp_path / "index.npz")
    restarted.sync(["weather__forecast"], [TEXTS["weather__forecast"]])
    restarted.sync(list(TEXTS), list(TEXTS.values()))
    assert len(embedder.embedded) == 3 and restarted.embedded_last_sync == 0


def test_an_index_that_cannot_be_written_is_a_warning(tmp_path: Path, caplog):  # type: ignore[no-untyped-def]
    (tmp_path / "a-file").write_text("")
    slb = SemanticLookasideBuffer(make_embedder("hashing"))
    slb.sync(list(TEXTS), list(TEXTS.values()))
    assert slb.save(tmp_path / "a-file" / "index.npz") is False
    assert "could not write state file" in caplog.text
