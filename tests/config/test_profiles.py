"""Profiles: a client never sees or calls a tool outside its profile (stdio `serve --profile`, and the meta layer)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from nexus_gateway.config import load_config
from nexus_gateway.errors import ConfigError
from nexus_gateway.gateway import Gateway
from nexus_gateway.meta.tools import MetaTools
from nexus_gateway.server.app import build_server
from tests.conftest import cli, faulty, gateway_params, library, text_of

ERAS = ["legacy", "auto"]
PROFILES = {
    "ops": {"servers": ["alpha"], "exclude_tools": ["*sleep"], "mode": "passthrough"},
    "finder": {"servers": ["alpha"], "include_tools": ["alpha__echo", "pid"], "mode": "routed"},
    "nothing": {"servers": ["nowhere"], "mode": "routed"},
}


def write(tmp_path: Path, **nexus: Any) -> Path:
    path = tmp_path / "gateway.json"
    settings = {"state_dir": str(tmp_path / "state"), "embedder": "hashing", "profiles": PROFILES, **nexus}
    servers = {"alpha": faulty("--name", "alpha"), "beta": library()}
    path.write_text(json.dumps({"mcpServers": servers, "nexus": settings}))
    return path


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_a_host_served_a_profile_over_stdio_neither_lists_nor_calls_nor_reads_outside_it(
    tmp_path: Path, era: str
):
    config = write(tmp_path, mode="passthrough")
    with anyio.fail_after(60):
        async with Client(gateway_params(config, "--profile", "ops"), mode=era, cache=None) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            echoed = await client.call_tool("alpha__echo", {"text": "inside"})
            other = await client.call_tool("beta__echo", {"text": "outside"})
            excluded = await client.call_tool("alpha__sleep", {"seconds": 0})
            resources = (await client.list_resources()).resources
            prompts = (await client.list_prompts()).prompts
            with pytest.raises(MCPError, match="No upstream serves"):
                await client.read_resource("library://readme")
            with pytest.raises(MCPError, match="Unknown prompt"):
                await client.get_prompt("beta__review", {"topic": "x"})
    assert names == {"alpha__echo", "alpha__pid", "alpha__grow"}
    assert text_of(echoed) == "inside"
    assert other.is_error and "Unknown tool 'beta__echo'" in text_of(other)
    assert excluded.is_error and "Unknown tool 'alpha__sleep'" in text_of(excluded)
    assert [resource.uri for resource in resources] == ["faulty://about"]
    assert prompts == []


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_a_routed_profile_finds_describes_and_calls_only_its_own_tools(tmp_path: Path, era: str):
    cfg = load_config(write(tmp_path))
    async with Gateway(cfg) as gateway:
        await gateway.wait_ready()
        async with Client(build_server(gateway, profile="finder"), mode=era, cache=None) as client:  # type: ignore[arg-type]
            with anyio.fail_after(60):
                listed = {tool.name for tool in (await client.list_tools()).tools}
                found = await client.call_tool("search_tools", {"query": "echo the text unchanged", "k": 10})
                hidden = await client.call_tool("call_tool", {"name": "beta__echo", "arguments": {"text": "x"}})
                described = await client.call_tool("describe_tool", {"name": "alpha__grow"})
                called = await client.call_tool("call_tool", {"name": "alpha__echo", "arguments": {"text": "in"}})
                direct = await client.call_tool("beta__echo", {"text": "x"})
    assert {"search_tools", "call_tool", "describe_tool"} <= listed
    assert not any(name.startswith("beta__") for name in listed)
    found_names = {tool["name"] for tool in found.structured_content["tools"]}  # type: ignore[index]
    assert found_names == {"alpha__echo", "alpha__pid"}
    assert hidden.is_error and "Unknown tool 'beta__echo'" in text_of(hidden)
    assert "beta__echo" not in text_of(hidden).split("Unknown tool 'beta__echo'")[1]  # no suggestion from outside
    assert described.is_error and "Unknown tool 'alpha__grow'" in text_of(described)
    assert text_of(called) == "in"
    assert direct.is_error


@pytest.mark.anyio
async def test_run_routes_only_among_the_tools_of_the_profile(tmp_path: Path):
    from nexus_gateway.config.profiles import Profile

    cfg = load_config(write(tmp_path))
    async with Gateway(cfg) as gateway:
        await gateway.wait_ready()
        tools = MetaTools.of(gateway)
        with anyio.fail_after(60):
            result = await tools.call_tool(
                "run", {"request": "echo the text hello"}, profile=Profile.of(gateway.settings, "nothing")
            )
    assert result.is_error and "No tool matches" in text_of(result)  # type: ignore[union-attr]
    assert not tools.engine_loaded  # routed among no tools: the model was never needed


def test_profiles_are_checked_with_the_config_and_serve_refuses_an_unknown_profile(tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"mcpServers": {}, "nexus": {"profiles": {"a": {"exclude_tool": ["x"]}}}}))
    with pytest.raises(ConfigError, match=r"profiles\.a\.exclude_tool.*Extra inputs"):
        load_config(bad)
    shared = {"a": {"tokens": ["same"]}, "b": {"tokens": ["same"]}}
    bad.write_text(json.dumps({"mcpServers": {}, "nexus": {"profiles": shared}}))
    with pytest.raises(ConfigError, match="'a' and 'b' share a token"):
        load_config(bad)
    served = cli("serve", "--config", str(write(tmp_path)), "--profile", "nobody")
    assert served.returncode == 2
    assert "Unknown profile 'nobody'; profiles: finder, nothing, ops." in served.stderr
