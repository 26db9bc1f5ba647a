"""Per-server prefixes and exposed names, with real upstream processes behind the gateway."""

import json
import logging
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from nexus_gateway.gateway import Gateway
from nexus_gateway.meta.tools import MetaTools
from nexus_gateway.server.app import build_server
from tests.conftest import ROOT, cli, faulty, make_config, running_gateway, text_of, write_config

pytestmark = pytest.mark.anyio
NAMED = str(ROOT / "tests" / "servers" / "named_server.py")


def named(label: str, *, tools: tuple[str, ...] = (), prompts: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
    args = [NAMED, "--label", label]
    for flag, values in (
        ("--tool", tools),
        ("--prompt", prompts),
        *((f"--{kind}", extra.pop(kind, ())) for kind in ("resource", "template")),
    ):
        for value in values:
            args += [flag, value]
    return {"command": sys.executable, "args": args, **extra}


async def listing(client: Client) -> tuple[list[Any], ...]:
    """Every name a client sees: tools, prompts, resources (with URIs) and templates."""
    templates = (await client.list_resource_templates()).resource_templates
    return (
        sorted(tool.name for tool in (await client.list_tools()).tools),
        [prompt.name for prompt in (await client.list_prompts()).prompts],
        [(item.name, str(item.uri)) for item in (await client.list_resources()).resources],
        [(item.name, item.uri_template) for item in templates],
    )


def answer(result: Any) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    return json.loads(text_of(result))


async def test_tools_whose_names_collided_under_underscores_are_two_tools_each_reaching_its_server(tmp_path: Path):
    servers = {"a_": named("a_", tools=("deploy",)), "a": named("a", tools=("_deploy",))}
    async with running_gateway(make_config(tmp_path, servers, mode="passthrough")) as (_, client):
        names = sorted(tool.name for tool in (await client.list_tools()).tools)
        assert len(names) == 2 and "a___deploy" in names
        other = next(name for name in names if name != "a___deploy")
        assert answer(await client.call_tool("a___deploy", {}))["server"] == "a"
        assert answer(await client.call_tool(other, {}))["server"] == "a_"


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_an_empty_prefix_makes_the_gateway_look_exactly_like_its_one_server(tmp_path: Path, era: str):
    entry = named(
        "solo",
        tools=("deploy", "search_tools", "run"),
        prompts=("greet me",),
        resource=("Resource 1",),
        template=("items",),
    )
    params = StdioServerParameters(command=entry["command"], args=entry["args"])
    with anyio.fail_after(30):
        async with Client(stdio_client(params), mode=era) as direct:  # type: ignore[arg-type]
            expected = await listing(direct)
    config = make_config(tmp_path, {"solo": entry | {"prefix": ""}}, mode="passthrough")
    async with Gateway(config) as gateway:
        await gateway.wait_ready()
        async with Client(build_server(gateway), mode=era, cache=None) as client:  # type: ignore[arg-type]
            seen = await listing(client)
            assert seen == expected
            assert answer(await client.call_tool("search_tools", {}))["tool"] == "search_tools"
            assert answer(await client.call_tool("run", {}))["tool"] == "run"
            prompt = await client.get_prompt("greet me")
            assert prompt.messages[0].content.text == "prompt greet me of solo"  # type: ignore[union-attr]


async def test_a_custom_prefix_names_the_tools_and_routes_their_calls(tmp_path: Path):
    config = make_config(
        tmp_path, {"github": named("github", tools=("deploy",), prefix="gh-")}, mode="routed", embedder="hashing"
    )
    async with running_gateway(config) as (_, client):
        found = await client.call_tool("describe_tool", {"name": "gh-deploy"})
        assert found.structured_content["server"] == "github"
        called = await client.call_tool("call_tool", {"name": "gh-deploy", "arguments": {}})
        assert answer(called) | {"server": "github", "tool": "deploy"} == answer(called)


async def test_a_call_to_a_prefixed_server_still_starting_says_it_is_starting(tmp_path: Path):
    config = make_config(tmp_path, {"slow": faulty("--hang-start", prefix="s_", start_timeout=30)}, mode="passthrough")
    async with Gateway(config) as gateway:
        result = await MetaTools.of(gateway).call_tool("s_echo", {"text": "hi"})
    assert result.is_error  # type: ignore[union-attr]
    assert "Upstream server 'slow' is starting" in text_of(result)


async def test_colliding_names_keep_the_server_earlier_in_the_config_and_the_log_names_both(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    servers = {
        "first": named("first", tools=("search",), prefix=""),
        "second": named("second", tools=("search", "other"), prefix=""),
    }
    with caplog.at_level(logging.ERROR, logger="nexus_gateway"):
        async with running_gateway(make_config(tmp_path, servers, mode="passthrough")) as (gateway, client):
            names = sorted(tool.name for tool in (await client.list_tools()).tools)
            assert names == ["other", "search"]
            assert answer(await client.call_tool("search", {}))["server"] == "first"
            assert [(c.name, c.server, c.owner) for c in gateway.catalog.collisions] == [("search", "second", "first")]
    logged = [record.getMessage() for record in caplog.records if "config error" in record.getMessage()]
    assert logged and all("'second'" in line and "'first'" in line and "'prefix'" in line for line in logged)


def test_config_check_connect_reports_a_name_collision_as_a_config_error(tmp_path: Path):
    servers = {"first": named("first", tools=("search",), prefix=""), "second": named("second", tools=("search",))}
    servers["second"]["prefix"] = ""
    result = cli("config", "check", "--config", str(write_config(tmp_path, servers)), "--connect")
    assert result.returncode == 2, result.stdout + result.stderr
    line = next(line for line in result.stderr.splitlines() if line.startswith("error:"))
    assert "server 'second', key 'prefix'" in line and "server 'first'" in line and "'search'" in line


async def test_an_unknown_prompt_is_named_as_a_prompt_with_the_closest_names(tmp_path: Path):
    config = make_config(tmp_path, {"one": named("one", prompts=("greet",))}, mode="passthrough")
    async with running_gateway(config) as (_, client):
        with pytest.raises(Exception) as info:
            await client.get_prompt("one__gret")
    message = str(info.value)
    assert "Unknown prompt 'one__gret'" in message and "Did you mean: one__greet" in message
    assert "server" not in message


async def test_an_unknown_tool_points_at_search_tools_only_where_it_is_served(tmp_path: Path):
    async with running_gateway(make_config(tmp_path, {"one": faulty()}, mode="passthrough")) as (_, client):
        passthrough = text_of(await client.call_tool("one__ecko", {}))
    config = make_config(tmp_path, {"one": faulty()}, mode="routed", embedder="hashing")
    async with running_gateway(config) as (_, client):
        routed = text_of(await client.call_tool("call_tool", {"name": "one__ecko"}))
    assert "one__echo" in passthrough and "search_tools" not in passthrough and "tools/list" in passthrough
    assert "one__echo" in routed and "search_tools" in routed
