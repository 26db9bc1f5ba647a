"""Real upstream servers installed from PyPI and npm, through the gateway."""

import shutil
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import make_config, running_gateway, text_of

pytestmark = pytest.mark.anyio

TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
CONVERT = {"source_timezone": "America/New_York", "time": "16:30", "target_timezone": "Asia/Tokyo"}


async def test_mcp_server_time_answers_the_same_through_the_gateway(tmp_path: Path):
    async with Client(StdioServerParameters(**TIME), mode="legacy", cache=None) as direct:
        expected = await direct.call_tool("convert_time", CONVERT)
    async with running_gateway(make_config(tmp_path, {"time": TIME}, mode="routed")) as (_, client):
        via_gateway = await client.call_tool("call_tool", {"name": "time__convert_time", "arguments": CONVERT})
    assert not via_gateway.is_error
    assert via_gateway.content == expected.content
    assert via_gateway.structured_content == expected.structured_content


async def test_mcp_server_git_reads_this_repository(tmp_path: Path):
    repo = Path(__file__).resolve().parent.parent
    assert (repo / ".git").exists(), "run the tests from a git checkout (CI runs them on a clone)"
    git = {"command": sys.executable, "args": ["-m", "mcp_server_git", "--repository", str(repo)]}
    async with running_gateway(make_config(tmp_path, {"git": git}, mode="passthrough")) as (_, client):
        result = await client.call_tool("git__git_log", {"repo_path": str(repo), "max_count": 1})
    assert not result.is_error and "Commit" in text_of(result)


@pytest.mark.npm
async def test_server_everything_from_npm_through_the_gateway(tmp_path: Path):
    npx = shutil.which("npx")
    assert npx, "npx is needed for this test (Node.js)"
    everything = {"command": npx, "args": ["-y", "@modelcontextprotocol/server-everything"]}
    config = make_config(tmp_path, {"everything": everything}, mode="passthrough", start_timeout=120)
    with anyio.fail_after(180):
        async with running_gateway(config) as (gateway, client):
            assert gateway.pool.get("everything").last_error is None  # type: ignore[union-attr]
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert "everything__echo" in names
            echoed = await client.call_tool("everything__echo", {"message": "through the gateway"})
            summed = await client.call_tool("everything__get-sum", {"a": 2, "b": 3})
            resources = await client.list_resources()
            prompts = await client.list_prompts()
    assert "through the gateway" in text_of(echoed)
    assert "5" in text_of(summed)
    assert resources.resources and all(r.name.startswith("everything__") for r in resources.resources)
    assert prompts.prompts and all(p.name.startswith("everything__") for p in prompts.prompts)
