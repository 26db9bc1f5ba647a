"""`nexus-gateway eval arguments` end to end with the real default model on a small labelled set."""

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from nexus_gateway.engine.prompt import PromptLayout
from nexus_gateway.engine.runtime import Runtime, SessionState
from nexus_gateway.evals.arguments import evaluate_arguments
from nexus_gateway.evals.dataset import load_cases, load_tools
from tests.conftest import cli, write_labelled_set
from tests.engine.conftest import settings

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


def _whole_turns(text: str, layout: PromptLayout) -> list[dict[str, Any]]:
    """`text` read as earlier turns written by `layout.turn_text`: each starts where the last ended, has its
    arguments as one JSON object and ends with its line; raises AssertionError at the first turn that does not."""
    opening, rest = layout.turn.split("{user}")
    between, closing = rest.split("{model}")
    assert text.startswith(opening), f"the history does not start with a turn: {text[:60]!r}"
    turns = []
    for chunk in text.split(opening)[1:]:
        assert chunk.endswith(closing) and between in chunk, f"a turn opened and never closed: ...{chunk[-60:]!r}"
        request, _, answer = chunk.partition(between)
        arguments, _, result = answer.removesuffix(closing).partition("\nResult: ")
        turns.append({"request": request, "arguments": json.loads(arguments), "result": result})
    return turns


@pytest.mark.anyio
async def test_eval_at_depth_256_gives_the_engine_whole_generic_turns_of_at_least_256_tokens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gen_runtime: Runtime
):
    appended: list[list[int]] = []
    real_append = Runtime.append

    def recording(self: Runtime, state: SessionState, tokens: list[int], *, logits: bool = True) -> Any:
        appended.append(list(tokens))
        return real_append(self, state, tokens, logits=logits)

    monkeypatch.setattr(Runtime, "append", recording)
    tools, cases = write_labelled_set(tmp_path, TOOLS, CASES[:1])
    with anyio.fail_after(300):
        report, outcomes = await evaluate_arguments(
            load_tools(tools), load_cases(cases), settings(), depth=256, compiled_root=tmp_path / "compiled"
        )
    history = appended[0]  # the first tokens decoded into the evaluation's session, before any case
    text = gen_runtime.model.detokenize(history)  # the default model's own tokenizer, as the engine used it
    turns = _whole_turns(text, gen_runtime.layout)
    assert len(history) >= 256 and len(turns) >= 5 and all(turn["arguments"] for turn in turns)
    assert all(case["query"] not in text for case in CASES), "the history shows the model the set's own requests"
    assert report["depth"] == len(history) and report["depth_requested"] == 256
    assert outcomes[0].generated.schema_valid
