"""Usage examples: the writer's prompt, parsing, the cache by tool definition (a fake engine: no model loads)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.engine import Completion
from nexus_gateway.generation.example_cache import ExampleCache, load_examples
from nexus_gateway.generation.examples import (
    EXAMPLES_GRAMMAR,
    MAX_EXAMPLES,
    ModelExampleWriter,
    Written,
    parse_examples,
    tool_query,
)

pytestmark = pytest.mark.anyio

WEATHER = ToolRecord.from_tool(
    "wx",
    {"name": "wx__now", "description": "Current conditions.", "inputSchema": {"properties": {"city": {}}}},
    name="wx__now",
)


def test_a_whole_reply_is_parsed_and_repeated_or_blank_requests_are_dropped():
    reply = '["weather in Oslo", "Weather  in Oslo", " ", "is it windy in Perth?"]'
    assert parse_examples(reply) == ["weather in Oslo", "is it windy in Perth?"]


def test_a_reply_cut_by_the_budget_keeps_its_complete_strings():
    assert parse_examples('["weather in Oslo", "is it windy in Pe') == ["weather in Oslo"]
    assert parse_examples("not json") == [] and parse_examples('{"a": 1}') == []


def test_at_most_the_grammar_s_number_of_requests_are_kept():
    assert len(parse_examples(json.dumps([f"request {i}" for i in range(9)]))) == MAX_EXAMPLES
    assert "{2,3}" in EXAMPLES_GRAMMAR  # 3 or 4 strings


def test_the_writer_reads_the_tool_without_its_server_prefix():
    assert tool_query(WEATHER).startswith("Tool: now(city") and "Current conditions." in tool_query(WEATHER)


class FakeEngine:
    def __init__(self) -> None:
        self.asked: list[str] = []
        self.concurrent = self.peak = 0

    async def complete(
        self, instruction: str, context: str, query: str, *, grammar: str, max_tokens: int
    ) -> Completion:
        self.asked.append(query)
        self.concurrent += 1
        self.peak = max(self.peak, self.concurrent)
        await anyio.lowlevel.checkpoint()
        self.concurrent -= 1
        assert grammar == EXAMPLES_GRAMMAR
        return Completion('["a request", "another request", "a third"]', 10, 12, 0.1, "fingerprint")


async def test_the_writer_asks_the_engine_for_several_tools_at_once_and_reports_each():
    engine = FakeEngine()
    records = [ToolRecord.from_tool("s", {"name": f"t{i}", "description": f"tool {i}"}) for i in range(5)]
    written: list[Written] = []
    with anyio.fail_after(5):
        await ModelExampleWriter(engine, batch=2).write(records, written.append)  # type: ignore[arg-type]
    assert sorted(w.content_hash for w in written) == sorted(r.content_hash for r in records)
    assert written[0].examples == ("a request", "another request", "a third") and written[0].model == "fingerprint"
    assert engine.peak == 2


def test_the_cache_keeps_examples_by_definition_with_the_model_that_wrote_them(tmp_path: Path):
    path = tmp_path / "usage_examples.json"
    cache = ExampleCache(path)
    cache.put("h1", ["a", "b"], "m1")
    cache.put("h2", [], "m1")  # the model wrote nothing usable: not written again, nothing indexed
    assert cache.save()
    again = ExampleCache(path)
    assert again.get("h1") == ("a", "b") and again.model_of("h1") == "m1" and "h2" in again
    assert again.examples() == {"h1": ["a", "b"]} and again.examples(["h2", "h3"]) == {}
    assert load_examples(path) == {"h1": ["a", "b"]}


def test_a_corrupt_cache_is_moved_aside_and_starts_empty(tmp_path: Path):
    path = tmp_path / "usage_examples.json"
    path.write_text('{"format": 1, "tools": {"h": {"examples": "not a list"}}}')
    assert len(ExampleCache(path)) == 0
    assert not path.exists() and list(tmp_path.glob("usage_examples.json.corrupt-*"))
