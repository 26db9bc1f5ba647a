"""Routing evaluation honours a case's `alternatives`: tools as right for the query as the gold one."""

from typing import Any

import numpy as np
import pytest

from nexus_gateway.errors import ConfigError
from nexus_gateway.evals.dataset import Case
from nexus_gateway.evals.routing import ToolPool, evaluate_routing, score_cases
from nexus_gateway.routing.embedders import HashingEmbedder


def _tool(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": {"type": "object", "properties": {}}}


TOOLS = [
    _tool("files.read", "Read a file."),
    _tool("disk.read_text_document", "Read the text document stored on disk at a path."),
    _tool("weather.forecast", "Forecast of rain and sun for a city."),
    _tool("mail.send", "Send an email to someone."),
    _tool("calendar.create_event", "Create an event in a calendar."),
]
QUERY = "read the text document on disk at notes/todo.txt"


def _ranks(cases: list[Case], size: int) -> list[int]:
    embedder = HashingEmbedder()
    pool = ToolPool(TOOLS, embedder)
    queries = embedder.embed_batch([case.query for case in cases])
    return [scored.gold_rank for scored in score_cases(pool, cases, queries, size, 0, "linear")]


def test_an_alternative_ranked_first_counts_as_right_over_the_whole_catalog():
    plain = Case("a", QUERY, "files.read")
    with_alternative = Case("b", QUERY, "files.read", alternatives=("disk.read_text_document",))
    assert _ranks([plain, with_alternative], len(TOOLS)) == [2, 1]


def test_an_alternative_counts_only_when_it_is_drawn_among_the_distractors():
    """At N = 2 the one distractor is the alternative for some seeds' cases and another tool for the rest;
    the gold tool beats every other tool, so each case is right either way, and never ranked below 1."""
    cases = [Case(f"c{i}", QUERY, "files.read", alternatives=("disk.read_text_document",)) for i in range(20)]
    assert _ranks(cases, 2) == [1] * 20
    plain = [Case(f"c{i}", QUERY, "files.read") for i in range(20)]
    ranks = _ranks(plain, 2)
    assert set(ranks) == {1, 2}  # without the alternative, the cases that drew it lose to it


def test_recall_at_5_and_top1_in_the_report_honour_alternatives():
    cases = [Case("b", QUERY, "weather.forecast", alternatives=("disk.read_text_document",))]
    report = evaluate_routing(TOOLS, cases, [len(TOOLS)], HashingEmbedder())
    assert report["sizes"][str(len(TOOLS))]["top1"] == 1.0


def test_an_alternative_missing_from_the_tool_set_is_a_clear_error():
    cases = [Case("b", QUERY, "files.read", alternatives=("nowhere.read",))]
    with pytest.raises(ConfigError, match=r"missing from the tool set.*nowhere\.read"):
        evaluate_routing(TOOLS, cases, [3], HashingEmbedder())


def test_the_evaluation_scores_bm25_as_the_gateway_index_does():
    """Over the whole catalog the evaluation's BM25F (ToolPool) and the gateway's index's (HybridRetriever's
    lexical side, which reads each tool's passages too) agree."""
    from nexus_gateway.catalog import ToolRecord
    from nexus_gateway.routing.bm25 import tokenize
    from nexus_gateway.routing.hybrid import HybridRetriever

    pool = ToolPool(TOOLS, HashingEmbedder())
    retriever = HybridRetriever(HashingEmbedder())
    retriever.index([ToolRecord.from_tool("", tool, name=tool["name"]) for tool in TOOLS])
    everything = np.arange(len(TOOLS))
    assert np.allclose(pool.bm25(tokenize(QUERY), everything), retriever.lexical.scores(QUERY))
