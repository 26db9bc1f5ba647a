"""`bench run-catalog` on a tiny catalog: stub upstreams listing a tools.json, the hashing embedder, `run`
with scripted fills (no model; model runs are benchmarks), and how each answer is scored."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from nexus_gateway.bench.catalog_server import listed_tools
from nexus_gateway.bench.run_catalog import STUB, run_catalog, score
from nexus_gateway.evals.dataset import Case
from nexus_gateway.generation.rerank import Reranker
from nexus_gateway.generation.sessions import SessionPool
from nexus_gateway.meta.run import Runner
from tests.meta.test_run_decision import Engine, Generator

ZONE = {"type": "string", "description": "IANA timezone name (e.g., 'America/New_York')"}
TOOLS = [
    {
        "server": "py-time",
        "name": "py-time__get_current_time",
        "description": "Get current time in a specific timezone",
        "inputSchema": {"type": "object", "properties": {"timezone": ZONE}, "required": ["timezone"]},
    },
    {
        "server": "npm-playwright",
        "name": "npm-playwright__browser_wait_for",
        "description": "Wait for text to appear or disappear or a specified time to pass",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
    {
        "server": "npm-hello",
        "name": "npm-hello__debug",
        "description": "Lists all available tools and methods",
        "inputSchema": {"type": "object", "properties": {}},
    },
]
SCHEMAS = {tool["name"]: tool["inputSchema"] for tool in TOOLS}
PARIS = Case("paris", "what time is it in Paris?", "py-time__get_current_time", {"timezone": ["Europe/Paris"]})


def test_the_stub_lists_one_servers_tools_under_their_upstream_names_and_echoes_a_call(tmp_path: Path):
    assert [tool["name"] for tool in listed_tools(TOOLS, "py-time")] == ["get_current_time"]
    assert len(listed_tools(TOOLS, None)) == 3 and listed_tools(TOOLS, None)[0]["name"] == "py-time__get_current_time"
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(TOOLS))
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "debug", "arguments": {"a": 1}}},
    ]
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    done = subprocess.run(
        [sys.executable, str(STUB), str(path), "--server", "npm-hello"],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    listed, called = (json.loads(line) for line in done.stdout.splitlines())
    assert [tool["name"] for tool in listed["result"]["tools"]] == ["debug"]
    assert listed["result"]["tools"][0]["annotations"] == {"readOnlyHint": True}
    assert json.loads(called["result"]["content"][0]["text"]) == {"tool": "debug", "arguments": {"a": 1}}


def test_an_answer_is_right_with_a_right_tool_and_arguments_or_honest_candidates_and_a_wrong_call_is_counted():
    called = {"status": "called", "trace": {"tool": PARIS.tool, "arguments": {"timezone": "europe/paris "}}}
    assert score(PARIS, called, False, SCHEMAS)[0] == "right"
    wrong_zone = {"status": "called", "trace": {"tool": PARIS.tool, "arguments": {"timezone": "Europe/London"}}}
    assert score(PARIS, wrong_zone, False, SCHEMAS)[0] == "right_tool_wrong_arguments"
    catch_all = {"status": "called", "trace": {"tool": "npm-playwright__browser_wait_for", "arguments": {}}}
    assert score(PARIS, catch_all, False, SCHEMAS)[0] == "wrong_called"
    candidates = [{"name": "npm-playwright__browser_wait_for"}, {"name": PARIS.tool}]
    assert score(PARIS, {"status": "ambiguous", "candidates": candidates}, False, SCHEMAS)[0] == "right"
    assert score(PARIS, {"status": "ambiguous", "candidates": candidates[:1]}, False, SCHEMAS)[0] == "missed"
    doubt = {"status": "proposed", "call": {"name": candidates[0]["name"], "arguments": {}}, "candidates": candidates}
    assert score(PARIS, doubt, False, SCHEMAS)[:2] == ("right", "proposed")
    assert score(PARIS, {"status": "invalid_arguments"}, True, SCHEMAS)[:2] == ("invalid", "invalid")


def test_an_alternative_is_compared_on_the_parameters_its_schema_has():
    case = Case("r", "read /tmp/a.txt", "fs__read_text_file", {"path": ["/tmp/a.txt"]}, ("dc__read_file",))
    schemas = {"dc__read_file": {"properties": {"file": {"type": "string"}}}}
    answer = {"status": "called", "trace": {"tool": "dc__read_file", "arguments": {"file": "/tmp/a.txt"}}}
    assert score(case, answer, False, schemas)[0] == "right"


@pytest.mark.anyio
async def test_run_catalog_serves_the_catalog_from_stubs_and_reports_each_case_and_the_stages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    plain = {
        "py-time__get_current_time": {"timezone": "Europe/London"},
        "npm-playwright__browser_wait_for": {"text": "what time is it in Paris"},
        "npm-hello__debug": {},
    }
    generator = Generator(plain, {"py-time__get_current_time": {"timezone": "Europe/Paris"}})
    engine = Engine({name: -10.0 if name.startswith("py-time") else -20.0 for name in plain})

    async def scripted(self: Runner) -> Any:
        self._generator = generator  # type: ignore[assignment]
        self._pool = SessionPool(engine, 1)  # type: ignore[arg-type]
        self._reranker = Reranker(engine, k=3)  # type: ignore[arg-type]
        return self._generator, self._pool

    monkeypatch.setattr(Runner, "_start", scripted)
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS))
    seen: list[str] = []
    with anyio.fail_after(60):
        result = await run_catalog(
            tools,
            [PARIS],
            state_dir=tmp_path / "state",
            nexus={"embedder": "hashing", "start_timeout": 30},
            progress=lambda number, total, outcome: seen.append(f"{number}/{total} {outcome.verdict}"),
        )
    assert seen == ["1/1 right"], result["cases"]
    (case,) = result["cases"]
    assert (
        case["status"] == "called" and case["tool"] == PARIS.tool and case["arguments"] == {"timezone": "Europe/Paris"}
    )
    summary = result["summary"]
    assert summary["right"] == 1 and summary["wrong_called"] == 0 and summary["statuses"] == {"called": 1}
    assert {"route", "fill", "call"} <= set(summary["stages_ms"]) and summary["latency_ms"]["p50"] > 0
    assert case["cpu_ms"] > 0 and summary["cpu_ms"]["p50"] == case["cpu_ms"]
    assert result["settings"]["usage_examples"] is False  # background writing would share the measured cores
    assert result["catalog"] == {"tools_json": str(tools), "tools": 3, "servers": 3}
