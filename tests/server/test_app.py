"""The protocol kernel in memory: what it tells clients and how it answers bad arguments, in both eras."""

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from nexus_gateway.gateway import Gateway
from nexus_gateway.meta.tools import MetaTools
from nexus_gateway.server.app import build_server
from tests.conftest import library, make_config, text_of

pytestmark = pytest.mark.anyio


async def test_clients_are_told_when_upstream_resources_and_prompts_change(tmp_path: Path):
    config = make_config(tmp_path, {"library": library()}, mode="passthrough")
    told: set[type] = set()
    both = anyio.Event()

    async def on_message(message: Any) -> None:
        told.add(type(message))
        if {types.ResourceListChangedNotification, types.PromptListChangedNotification} <= told:
            both.set()

    with anyio.fail_after(30):
        async with Gateway(config) as gateway:
            await gateway.wait_ready()
            async with Client(build_server(gateway), mode="legacy", cache=None, message_handler=on_message) as client:
                await client.list_tools()  # the gateway tells the clients it has served
                await client.call_tool("library__shelve", {"slug": "dune"})
                await both.wait()
                resources = await client.list_resources()
                prompts = await client.list_prompts()
    assert "library://shelved/dune" in {str(resource.uri) for resource in resources.resources}
    assert "library__about_dune" in {prompt.name for prompt in prompts.prompts}
    assert types.ToolListChangedNotification not in told  # the tools did not change


@pytest.mark.parametrize("era", ["legacy", "auto"])
@pytest.mark.parametrize(
    ("tool", "arguments", "named"),
    [
        ("search_tools", {"query": "echo", "k": "abc"}, "k"),
        ("search_tools", {"k": 3}, "query"),
        ("call_tool", {"name": "one__echo", "arguments": "text=hi"}, "arguments"),
        ("describe_tool", {"name": 7}, "name"),
    ],
)
async def test_meta_tool_arguments_are_checked_against_their_own_schemas(
    tmp_path: Path, era: str, tool: str, arguments: dict[str, Any], named: str
):
    config = make_config(tmp_path, {}, mode="routed", embedder="hashing")
    with anyio.fail_after(30):
        async with Gateway(config) as gateway, Client(build_server(gateway), mode=era, cache=None) as client:
            result = await client.call_tool(tool, arguments)
    message = text_of(result)
    assert result.is_error
    assert message.startswith(f"Arguments for {tool!r} do not match its input schema: ")
    assert f"{named}: " in message or f"'{named}' is a required property" in message


@pytest.mark.parametrize("k", [float("inf"), float("-inf"), float("nan"), None], ids=["inf", "-inf", "nan", "null"])
async def test_a_k_json_cannot_carry_is_named_with_what_k_must_be(tmp_path: Path, k: Any):
    """Through the SDK (HTTP, in memory) Infinity and NaN arrive as null; a stdio line keeps them as floats."""
    config = make_config(tmp_path, {}, mode="routed", embedder="hashing")
    with anyio.fail_after(30):
        async with Gateway(config) as gateway, Client(build_server(gateway), mode="legacy", cache=None) as client:
            through_the_sdk = text_of(await client.call_tool("search_tools", {"query": "echo", "k": k}))
            as_read = text_of(await MetaTools.of(gateway).call_tool("search_tools", {"query": "echo", "k": k}))
    shown = {"inf": "Infinity", "-inf": "-Infinity", "nan": "NaN", "None": "null"}[str(k)]
    for message, named in [(through_the_sdk, "null"), (as_read, shown)]:
        assert f"k: {named} " in message and "is not a whole number from 1 to 50" in message, message
        assert "None is not of type" not in message
