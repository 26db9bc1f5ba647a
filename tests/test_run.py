"""`run` end to end: an MCP client, the gateway over stdio, the local model, the real mcp-server-time."""

import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import make_config, running_gateway, text_of, write_config

pytestmark = pytest.mark.anyio
TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
ENGINE = {"n_ctx": 2048, "sessions": 2}


KNOWN_GAP = (
    "issue 5 is open: with the default 270M model the re-rank picks convert_time and the arguments say "
    "'Tokyo', not 'Asia/Tokyo' (see the README's run section); strict, so a fix makes this test fail until unmarked"
)


@pytest.mark.xfail(reason=KNOWN_GAP, strict=True)
async def test_run_over_stdio_reaches_mcp_server_time_and_returns_its_answer(tmp_path: Path):
    config = write_config(tmp_path, {"time": TIME}, mode="routed", engine=ENGINE)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "nexus_gateway", "serve", "--config", str(config)]
    )
    with anyio.fail_after(120):
        async with Client(params, mode="legacy", cache=None) as client:
            assert "run" in {tool.name for tool in (await client.list_tools()).tools}
            result = await client.call_tool("run", {"request": "what time is it in Tokyo?"})
    trace = (result.structured_content or {}).get("trace", {})
    assert trace.get("tool") == "time__get_current_time", (text_of(result), trace)
    assert not result.is_error and "Asia/Tokyo" in text_of(result), (text_of(result), trace)


async def test_run_turned_off_is_not_listed_and_says_so(tmp_path: Path):
    config = make_config(tmp_path, {"time": TIME}, mode="routed", run=False)
    async with running_gateway(config) as (gateway, client):
        assert "run" not in {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("run", {"request": "time in UTC"})
    assert result.is_error and "turned off" in text_of(result) and gateway.runner._engine is None
