"""`nexus-gateway eval arguments` end to end with the real default model on a small labelled set."""

import json
from pathlib import Path

from tests.conftest import cli, write_labelled_set

TOOLS = [
    {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
    {
        "name": "send_email",
        "description": "Send an email to one recipient.",
        "inputSchema": {
            "type": "object",
            "required": ["to", "subject"],
            "properties": {"to": {"type": "string"}, "subject": {"type": "string"}},
        },
    },
]
CASES = [
    {"id": "w1", "query": "What is the weather in Paris?", "tool": "get_weather", "arguments": {"city": ["Paris"]}},
    {"id": "w2", "query": "Weather in Lima please", "tool": "get_weather", "arguments": {"city": ["Lima"]}},
    {
        "id": "e1",
        "query": "Email bob@example.com about lunch",
        "tool": "send_email",
        "arguments": {"to": ["bob@example.com"], "subject": ["lunch", "Lunch"]},
    },
]
KEYS = {"n_cases", "json_valid", "schema_valid", "args_exact", "tool_top1", "end_to_end", "ttft_ms_p50", "total_ms_p50"}


def test_eval_arguments_writes_the_documented_report_and_every_case_in_details(tmp_path: Path):
    (tools, cases), out = write_labelled_set(tmp_path, TOOLS, CASES), tmp_path / "report.json"
    details = tmp_path / "details.jsonl"
    result = cli(
        "eval",
        "arguments",
        "--tools",
        str(tools),
        "--cases",
        str(cases),
        "--mode",
        "signature",
        "--route",
        "--json",
        str(out),
        "--details",
        str(details),
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(out.read_text())
    assert set(report) >= KEYS and report["n_cases"] == 3 and report["mode"] == "signature"
    assert report["json_valid"] == report["schema_valid"] == 1.0
    assert report["tool_top1"] == 1.0  # two unrelated tools: the router cannot confuse them
    assert 0 < report["ttft_ms_p50"] <= report["total_ms_p50"]
    assert report["args_exact"] >= 2 / 3, report  # the weather cases at least: the city is in the request
    rows = [json.loads(line) for line in details.read_text().splitlines()]
    assert [row["id"] for row in rows] == ["w1", "w2", "e1"]
    for row, case in zip(rows, CASES, strict=True):
        assert row["request"] == case["query"] and row["gold"] == case["arguments"] and row["tool"] == case["tool"]
        assert isinstance(row["generated"], dict) and row["verdict"]["schema_valid"] is True
        assert row["verdict"]["args_ok"] == (row["verdict"]["wrong"] == [])
    assert sum(row["verdict"]["args_ok"] for row in rows) == round(report["args_exact"] * 3)
