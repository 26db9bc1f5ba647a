"""`nexus-gateway eval routing` end to end on a small labelled set."""

import json
from pathlib import Path
from typing import Any

from tests.conftest import cli, write_labelled_set

TOOLS = [
    {
        "name": f"tool.{topic}",
        "description": f"Everything about {topic}: look up, list and update {topic}.",
        "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
    }
    for topic in (
        "weather",
        "calendar",
        "invoices",
        "recipes",
        "flights",
        "hotels",
        "music",
        "movies",
        "stocks",
        "books",
        "emails",
        "contacts",
    )
]
CASES = [
    {"id": f"c{i}", "query": f"please update my {topic} for next week", "tool": f"tool.{topic}"}
    for i, topic in enumerate(("weather", "calendar", "invoices", "recipes", "flights", "music"))
]


def _eval_routing(tools: Path, cases: Path, *options: str) -> Any:
    """`eval routing` on a labelled set at N = 5 and 12 with the hashing embedder, and these options."""
    command = ["eval", "routing", "--tools", str(tools), "--cases", str(cases), "--sizes", "5,12"]
    return cli(*command, "--embedder", "hashing", *options, timeout=120)


def test_eval_routing_writes_the_report_in_the_documented_format(tmp_path: Path):
    (tools, cases), out = write_labelled_set(tmp_path, TOOLS, CASES), tmp_path / "report.json"
    result = _eval_routing(tools, cases, "--json", str(out))
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    assert report["n_cases"] == 6 and set(report["sizes"]) == {"5", "12"}
    for row in report["sizes"].values():
        assert set(row) == {"top1", "recall@5", "auto_coverage", "auto_precision"}
        assert row["top1"] == 1.0  # each query names its topic: a lexical embedder must get all six
    assert report["embed_ms_p50"] > 0 and set(report["scan_us_p50"]) == {"5", "12"}
    assert "top-1" in result.stdout


def test_eval_routing_details_say_where_each_right_tool_ranked(tmp_path: Path):
    """Without --rerank, `--details` writes a line per case and size: the right tool's rank and the best five.
    One case is labelled with a tool its request does not name, so it must rank below another tool."""
    labelled = [*CASES, {"id": "off", "query": "please update my hotels for next week", "tool": "tool.books"}]
    (tools, cases), details = write_labelled_set(tmp_path, TOOLS, labelled), tmp_path / "details.jsonl"
    result = _eval_routing(tools, cases, "--details", str(details))
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in details.read_text().splitlines()]
    assert len(rows) == 2 * len(labelled) and {row["size"] for row in rows} == {5, 12}
    for row in rows:
        assert len(row["top"]) == 5 and row["top"] == sorted(row["top"], key=lambda tool: -tool["score"])
        if row["id"] != "off":
            assert row["right_rank"] == 1 and row["top"][0]["name"] == row["gold"] and row["top"][0]["right"]
    off = next(row for row in rows if row["id"] == "off" and row["size"] == 12)
    assert off["right_rank"] > 1 and off["top"][0]["name"] == "tool.hotels" and not off["top"][0]["right"]


def test_cases_naming_unknown_tools_are_a_clear_error(tmp_path: Path):
    tools, cases = tmp_path / "tools.json", tmp_path / "cases.jsonl"
    tools.write_text(json.dumps(TOOLS))
    cases.write_text(json.dumps({"id": "x", "query": "q", "tool": "tool.nope"}))
    result = cli(
        "eval",
        "routing",
        "--tools",
        str(tools),
        "--cases",
        str(cases),
        "--sizes",
        "5",
        "--embedder",
        "hashing",
        timeout=120,
    )
    assert result.returncode == 2 and "missing from the tool set" in result.stderr


def test_eval_routing_rerank_scores_every_candidate_below_the_gate(tmp_path: Path):
    """`--tau` huge: every case is below the gate, so every one is re-ranked with the default model."""
    chosen = [case for case in CASES if case["tool"] in ("tool.weather", "tool.flights")]
    (tools, cases), out = write_labelled_set(tmp_path, TOOLS, chosen), tmp_path / "report.json"
    details = tmp_path / "reranked.jsonl"
    result = cli(
        "eval",
        "routing",
        "--tools",
        str(tools),
        "--cases",
        str(cases),
        "--sizes",
        "12",
        "--embedder",
        "hashing",
        "--tau",
        "1e9",
        "--rerank",
        "--rerank-k",
        "3",
        "--json",
        str(out),
        "--details",
        str(details),
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    reranked = json.loads(out.read_text())["sizes"]["12"]["rerank"]
    assert reranked["reranked"] == 2 and reranked["rerank_k"] == 3 and reranked["rerank_ms_p50"] > 0, reranked
    rows = [json.loads(line) for line in details.read_text().splitlines()]
    assert [len(row["candidates"]) for row in rows] == [3, 3] and [len(row["scores"]) for row in rows] == [3, 3]
    assert all(row["choice"] in (*row["candidates"], None) and row["gold"] in row["candidates"] for row in rows)
