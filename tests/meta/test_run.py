"""`run` with the real mcp-server-time behind the gateway and the real default model generating."""

import json
import sys
from datetime import datetime
from pathlib import Path

import anyio
import pytest
from mcp import Client

from nexus_gateway.meta.tools import MetaTools
from tests.conftest import EXAMPLES, gateway_params, make_config, running_gateway, stdio_entry, text_of, write_config

pytestmark = pytest.mark.anyio
TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
NOTES = stdio_entry(str(EXAMPLES / "servers" / "notes_server.py"))


async def test_run_turned_off_is_not_listed_and_says_so(tmp_path: Path):
    config = make_config(tmp_path, {"time": TIME}, mode="routed", run=False)
    async with running_gateway(config) as (gateway, client):
        assert "run" not in {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("run", {"request": "time in UTC"})
    assert result.is_error and "turned off" in text_of(result) and not MetaTools.of(gateway).engine_loaded


async def test_run_over_stdio_answers_what_time_it_is_in_tokyo(tmp_path: Path):
    """An MCP host starts the gateway over stdio; `run` routes, fills `Asia/Tokyo`, and mcp-server-time answers."""
    config = write_config(tmp_path, {"time": TIME}, mode="routed")
    with anyio.fail_after(180):
        async with Client(gateway_params(config), mode="legacy", cache=None) as client:
            result = await client.call_tool("run", {"request": "what time is it in Tokyo?"})
    structured = result.structured_content
    assert not result.is_error and structured is not None, text_of(result)
    trace = structured["trace"]
    assert structured["status"] == "called", trace
    assert trace["tool"] == "time__get_current_time" and trace["arguments"] == {"timezone": "Asia/Tokyo"}, trace
    answer = json.loads(text_of(result))  # mcp-server-time's own answer
    assert answer["timezone"] == "Asia/Tokyo"
    assert datetime.fromisoformat(answer["datetime"]).utcoffset().total_seconds() == 9 * 3600


async def test_run_returns_the_candidates_when_the_request_fills_none_of_them(tmp_path: Path):
    """No zone in the request: whatever zone the model picks is invented, for both time tools."""
    config = make_config(tmp_path, {"time": TIME}, mode="routed")
    async with running_gateway(config) as (_, client):
        result = await client.call_tool("run", {"request": "what time is it?"})
    structured = result.structured_content
    assert structured is not None and structured["status"] == "ambiguous", text_of(result)
    assert {c["name"] for c in structured["candidates"]} == {"time__get_current_time", "time__convert_time"}
    trace = structured["trace"]
    assert trace["reranked"] and set(trace["candidates"]) == {"time__get_current_time", "time__convert_time"}, trace
    assert trace["choice"] in trace["candidates"] and trace["rerank_ms"] > 0, trace  # the best fused candidate
    assert [row["name"] for row in trace["scores"]] == trace["candidates"], trace  # every candidate scored
    checked = trace["checked"]
    assert trace["routing"] == "ambiguous" and checked[0]["tool"] == trace["choice"] and len(checked) == 2, checked
    assert all(c["invented"] > 0 for c in checked), checked  # ... and the request gives it no zone


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_search_tools_with_rerank_marks_the_best_re_ranked_tool_below_the_gate(tmp_path: Path, era: str):
    config = make_config(tmp_path, {"time": TIME}, mode="routed")
    async with running_gateway(config, era=era) as (gateway, client):
        plain = await client.call_tool("search_tools", {"query": "what time is it?"})
        loaded_before = MetaTools.of(gateway).engine_loaded
        with anyio.fail_after(180):
            result = await client.call_tool("search_tools", {"query": "what time is it?", "rerank": True})
    assert not loaded_before and plain.structured_content is not None and "rerank" not in plain.structured_content
    structured = result.structured_content
    assert not result.is_error and structured is not None, text_of(result)
    names = [tool["name"] for tool in structured["tools"]]
    assert structured["rerank"]["reranked"] and structured["rerank"]["candidates"] == names, structured
    assert structured["chosen"] == "time__get_current_time", structured
    scores = structured["rerank"]["scores"]
    assert [row["name"] for row in scores] == names and all(row["likelihood"] < 0 for row in scores), scores
    assert "Re-ranked with the local model: time__get_current_time fits this request best" in text_of(result)


@pytest.mark.parametrize("auto_execute", [[], ["notes__create_note"]])
async def test_run_calls_a_tool_that_is_not_read_only_only_when_the_config_allows_it(tmp_path: Path, auto_execute):
    config = make_config(tmp_path, {"notes": NOTES}, mode="routed", auto_execute=auto_execute)
    async with running_gateway(config) as (_, client):
        result = await client.call_tool("run", {"request": "Create a note titled Groceries"})
        found = await client.call_tool(
            "call_tool", {"name": "notes__search_notes", "arguments": {"query": "Groceries"}}
        )
    structured = result.structured_content
    assert not result.is_error and structured is not None, text_of(result)
    assert (
        structured["trace"]["tool"] == "notes__create_note" and structured["trace"]["arguments"]["title"] == "Groceries"
    )
    if auto_execute:
        assert structured["status"] == "called" and structured["result"]["title"] == "Groceries"
        assert "Groceries" in text_of(found)
    else:
        assert structured["status"] == "proposed" and structured["call"]["name"] == "notes__create_note"
        assert "call_tool" in text_of(result) and "Groceries" not in text_of(found)  # nothing was created


async def test_over_stdio_in_the_modern_era_a_follow_up_is_the_same_hosts_and_routed_by_its_last_request(
    tmp_path: Path,
):
    """Each modern-era request comes on a connection of its own; a stdio gateway serves one host, so both runs
    share its engine session, and "and in Paris?" is routed by the request it follows."""
    config = write_config(tmp_path, {"time": TIME}, mode="routed")
    with anyio.fail_after(240):
        async with Client(gateway_params(config), mode="auto", cache=None) as client:
            first = await client.call_tool("run", {"request": "what time is it in Tokyo?"})
            again = await client.call_tool("run", {"request": "and in Paris?"})
    assert first.structured_content is not None and again.structured_content is not None, text_of(again)
    before, after = first.structured_content["trace"], again.structured_content["trace"]
    assert after["follows"] == "what time is it in Tokyo?" and after["history"], after
    assert after["session"] == before["session"], (before, after)
    assert after["tool"] == "time__get_current_time" and after["arguments"] == {"timezone": "Europe/Paris"}, after
