"""`nexus-gateway eval arguments` end to end with the real default model on a small labelled set."""

import json
from pathlib import Path

from tests.conftest import cli, write_labelled_set

TOOLS = [
    {"name": "get_weather", "description": "Current weather for a city.",
     "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
    {"name": "send_email", "description": "Send an email to one recipient.",
     "inputSchema": {"type": "object", "required": ["to", "subject"],
                     "properties": {"to": {"type": "string"}, "subject": {"type": "string"}}}},
]  # fmt: skip
CASES = [
    {"id": "w1", "query": "What is the weather in Paris?", "tool": "get_weather", "arguments": {"city": ["Paris"]}},
    {"id": "w2", "query": "Weather in Lima please", "tool": "get_weather", "arguments": {"city": ["Lima"]}},
    {"id": "e1", "query": "Email bob@example.com about lunch", "tool": "send_email",
     "arguments": {"to": ["bob@example.com"], "subject": ["lunch", "Lunch"]}},
]  # fmt: skip
KEYS = {"n_cases", "json_valid", "schema_valid", "args_exact", "tool_top1", "end_to_end", "ttft_ms_p50", "total_ms_p50"}


def test_eval_arguments_writes_the_documented_report(tmp_path: Path):
    (tools, cases), out = write_labelled_set(tmp_path, TOOLS, CASES), tmp_path / "report.json"
    result = cli(
        "eval", "arguments", "--tools", str(tools), "--cases", str(cases),
        "--mode", "signature", "--route", "--json", str(out), timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(out.read_text())
    assert set(report) >= KEYS and report["n_cases"] == 3 and report["mode"] == "signature"
    assert report["json_valid"] == report["schema_valid"] == 1.0
    assert report["tool_top1"] == 1.0  # two unrelated tools: the router cannot confuse them
    assert 0 < report["ttft_ms_p50"] <= report["total_ms_p50"]
    assert report["args_exact"] >= 2 / 3, report  # the weather cases at least: the city is in the request
