"""Tools found by how they are used: example requests indexed beside descriptions, a tool scored by its best row."""

from __future__ import annotations

import numpy as np
import pytest

from nexus_gateway.catalog import ToolRecord, content_hash
from nexus_gateway.evals.routing import ToolPool
from nexus_gateway.routing.embedders import make_embedder
from nexus_gateway.routing.hybrid import HybridRetriever
from nexus_gateway.routing.retriever import ToolFields
from nexus_gateway.routing.usage import EXAMPLE_WEIGHT, ToolRows, examples_of, other_rows

TOOLS = [
    {"name": "zq_fetch", "description": "Retrieve the entity payload by handle.", "inputSchema": {"type": "object"}},
    {"name": "zq_store", "description": "Persist an entity payload under a handle.", "inputSchema": {"type": "object"}},
    {"name": "zq_purge", "description": "Remove stale entries from the cache.", "inputSchema": {"type": "object"}},
]
EXAMPLES = {content_hash(TOOLS[0]): ["show me invoice 4411 from the billing system", "open ticket 77"]}
QUERY = "show me invoice 4411 from the billing cache"


def records() -> list[ToolRecord]:
    return [ToolRecord.from_tool("s", tool) for tool in TOOLS]


def test_a_tool_scores_by_its_description_blended_with_its_best_example():
    rows = ToolRows.of(["a", "b", "c"], [["a1", "a2"], [], ["c1"]])
    assert rows.texts == ["a", "a1", "a2", "b", "c", "c1"]
    assert rows.owners.tolist() == [0, 0, 0, 1, 2, 2] and rows.starts.tolist() == [0, 3, 4]
    w = EXAMPLE_WEIGHT
    best = rows.best(np.array([0.1, 0.7, 0.2, 0.3, 0.5, 0.4]))
    assert np.allclose(best, [(0.1 + w * 0.7) / (1 + w), 0.3, (0.5 + w * 0.4) / (1 + w)])
    assert rows.rows_of(np.array([2, 0])).tolist() == [4, 5, 0, 1, 2]
    assert rows.extra == 3


def test_a_description_gives_its_lead_sentences_as_passages_the_first_led_by_the_name():
    fields = ToolFields.of(
        "read_text_file",
        "Read a file as text.\nArgs:\n- path: x. Handles encodings! Use head for the first lines. More.",
        None,
    )
    assert fields.passages() == [
        "read text file: Read a file as text.",
        "Read a file as text.",
        "Handles encodings!",  # "Args:" and "- path: x." are fragments
        "Use head for the first lines.",
    ]
    assert ToolFields.of("ping", "", None).passages() == []
    assert other_rows(ToolFields.of("ping", "Ping a host by name.", None), ["ping example.org"]) == [
        "ping: Ping a host by name.",
        "Ping a host by name.",
        "ping example.org",
    ]


def test_rows_a_tool_count_every_row_and_round_up():
    rows = ToolRows.of(["a", "b", "c"], [["a1", "a2", "a3"], [], ["c1"]])
    assert rows.extra == 4 and rows.per_tool == 3  # 7 rows for 3 tools
    assert ToolRows.of(["a"], [[]]).per_tool == 1 and ToolRows.of([], []).per_tool == 1


def test_examples_are_looked_up_by_content_hash_and_a_tool_without_has_none():
    assert examples_of(["x", "y"], {"x": ("one", "two")}) == [["one", "two"], []]
    assert examples_of(["x"], None) == [[]]


def test_examples_find_a_tool_its_description_does_not_and_are_lexical_text_too():
    plain = HybridRetriever(make_embedder("hashing"))
    plain.index(records())
    assert plain.search(QUERY, 3)[0].name != "s__zq_fetch"
    used = HybridRetriever(make_embedder("hashing"))
    used.use_examples(EXAMPLES)
    used.index(records())
    assert used.search(QUERY, 3)[0].name == "s__zq_fetch"
    assert len(used.slb) == 3 + 3 * 2 + 2  # 3 descriptions, their passages (the led sentence, the sentence), 2 examples
    assert used.rows.extra == 3 * 2 + 2
    lexical = used.lexical.scores("invoice")
    assert lexical[0] > 0 and not lexical[1:].any()


def test_examples_given_later_are_embedded_on_the_next_index_run_only():
    retriever = HybridRetriever(make_embedder("hashing"))
    retriever.index(records())
    retriever.use_examples(EXAMPLES)
    assert retriever.search(QUERY, 3)[0].name != "s__zq_fetch"  # not until the next run
    retriever.index(records())
    assert retriever.search(QUERY, 3)[0].name == "s__zq_fetch"
    assert retriever.slb.embedded_last_sync == 0  # publishing embeds nothing: `index` learned them first


def test_large_catalogs_score_examples_alike(monkeypatch: pytest.MonkeyPatch):
    from nexus_gateway.routing import hybrid, slb

    many = [
        ToolRecord.from_tool("bulk", {"name": f"t{i}", "description": f"topic {i % 41} of {i % 13}"})
        for i in range(300)
    ]
    small = HybridRetriever(make_embedder("hashing"))
    small.use_examples(EXAMPLES)
    small.index(many + records())
    monkeypatch.setattr(slb, "FAISS_ABOVE", 100)
    monkeypatch.setattr(hybrid, "LARGE_POOL", 20)
    large = HybridRetriever(make_embedder("hashing"))
    large.use_examples(EXAMPLES)
    large.index(many + records())
    assert large.slb.large and not small.slb.large
    expected, found = small.search(QUERY, 5), large.search(QUERY, 5)
    assert found[0].name == expected[0].name == "s__zq_fetch"
    assert [round(h.score, 5) for h in found] == [round(h.score, 5) for h in expected]


def test_the_evaluation_pool_scores_tools_exactly_as_the_gateway_index_does():
    embedder = make_embedder("hashing")
    retriever = HybridRetriever(embedder, method="dense")
    retriever.use_examples(EXAMPLES)
    retriever.index([ToolRecord.from_tool("", tool, name=tool["name"]) for tool in TOOLS])
    pool = ToolPool(TOOLS, embedder, examples=EXAMPLES)
    query = embedder.embed_batch([QUERY])[0]
    gateway = {hit.name: hit.score for hit in retriever.search(QUERY, 3)}
    evaluated = pool.dense(np.arange(3), query)
    assert [round(gateway[name], 5) for name in pool.names] == [round(float(s), 5) for s in evaluated]
    assert pool.with_examples == 1 and pool.matrix.shape[0] == 3
    assert pool.terms[0].get("invoice", 0) > 0  # BM25 reads the examples as the gateway's index does
