import uuid
from pathlib import Path

import pytest

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.routing import bm25, hybrid
from nexus_gateway.routing.embedders import make_embedder
from nexus_gateway.routing.gate import Calibration
from nexus_gateway.routing.hybrid import HybridRetriever, build_retriever


def record(server: str, name: str, description: str, **params: str) -> ToolRecord:
    schema = {"type": "object", "properties": {p: {"type": "string", "description": d} for p, d in params.items()}}
    return ToolRecord.from_tool(server, {"name": name, "description": description, "inputSchema": schema})


RECORDS = [
    record("weather", "get_forecast", "Daily weather forecast for a city", city="City name"),
    record("calendar", "create_event", "Create a calendar event", title="Event title", start="Start time"),
    record("notes", "search_notes", "Full-text search over notes", query="Words to find"),
]


def test_hybrid_retriever_finds_tools_by_meaning_and_by_words(tmp_path: Path):
    retriever = HybridRetriever(make_embedder("default"), index_path=tmp_path / "index.npz")
    retriever.index(RECORDS)
    assert retriever.search("will it rain in Paris tomorrow?", 2)[0].name == "weather__get_forecast"
    assert retriever.search("schedule a meeting with Bob", 2)[0].name == "calendar__create_event"
    assert (tmp_path / "index.npz").exists()


def test_a_calibration_from_another_embedder_routes_nothing_automatically():
    calibration = Calibration(0.1, 0.98, 1.0, 0.5, 10, "some-other-model", 250)
    assert HybridRetriever(make_embedder("hashing"), calibration=calibration).tau == float("inf")
    assert (
        HybridRetriever(
            make_embedder("hashing"),
            calibration=calibration.__class__(**{**calibration.__dict__, "embedder": make_embedder("hashing").name}),
        ).tau
        == 0.1
    )


def test_bm25_spec_builds_the_lexical_retriever(tmp_path: Path):
    retriever = build_retriever("bm25", tmp_path)
    retriever.index(RECORDS)
    assert retriever.search("search notes", 1)[0].name == "notes__search_notes"


def test_large_catalogs_answer_from_faiss_with_the_same_ranking(monkeypatch):
    from nexus_gateway.routing import hybrid, slb

    many = [record("bulk", f"tool_{i}", f"handles topic {i % 41} for object {i % 13}") for i in range(300)] + RECORDS
    small = HybridRetriever(make_embedder("hashing"))
    small.index(many)
    expected = small.search("weather forecast for a city", 5)
    monkeypatch.setattr(slb, "FAISS_ABOVE", 100)
    monkeypatch.setattr(hybrid, "LARGE_POOL", 20)
    large = HybridRetriever(make_embedder("hashing"))
    large.index(many)
    assert large.slb.large and not small.slb.large
    found = large.search("weather forecast for a city", 5)
    assert found[0].name == expected[0].name == "weather__get_forecast"
    assert [round(h.score, 5) for h in found] == [round(h.score, 5) for h in expected]  # equal up to ties


def test_a_gguf_embedder_named_in_the_config_routes_through_the_hybrid_index(tmp_path: Path):
    from nexus_gateway.engine.model import resolve_model

    model = resolve_model(None).path
    retriever = build_retriever(f"gguf:{model}", tmp_path)
    weather = ToolRecord.from_tool("w", {"name": "get_forecast", "description": "Weather forecast for a city"})
    mail = ToolRecord.from_tool("m", {"name": "send_email", "description": "Send an email to a recipient"})
    retriever.index([weather, mail])
    assert retriever.search("what is the weather forecast for Paris", 2)[0].name == weather.name
    assert (tmp_path / f"index-gguf_{model.name}.npz").is_file()  # the vectors persist like any embedder's


def test_a_growing_index_tokenizes_each_tool_text_once(monkeypatch: pytest.MonkeyPatch):
    """A cold start publishes the index after every batch it embeds, each time with a fresh BM25 over every tool
    embedded so far: each tool's text is still tokenized once, not once per publication."""
    monkeypatch.setattr(hybrid, "INDEX_BATCH", 2)
    fresh = uuid.uuid4().hex  # texts no index in this process has seen
    records = [record("s", f"tool_{i}", f"Tool {fresh} number {i}", arg=f"Argument {i}") for i in range(10)]
    tokenized: list[str] = []
    real = bm25.tokenize

    def counting(text: str) -> list[str]:
        tokenized.append(text)
        return real(text)

    monkeypatch.setattr(bm25, "tokenize", counting)
    HybridRetriever(make_embedder("hashing")).index(records)
    assert len(tokenized) == len(set(tokenized))  # each field's text once (BM25F reads a tool field by field)
    for i in range(len(records)):  # every description is read: alone, or (in the last publication) with its passages
        assert any(text.startswith(f"Tool {fresh} number {i}") for text in tokenized)
