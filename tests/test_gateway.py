"""The gateway's front, driven in memory, with real upstream processes behind it, or in-process upstreams
(tests/fakes.py) where only the gateway's own behaviour is under test."""

from pathlib import Path

import anyio
import pytest

from tests.conftest import faulty, make_config, running_gateway, text_of
from tests.fakes import fake_gateway, faulty_server

pytestmark = pytest.mark.anyio


async def test_passthrough_lists_every_upstream_tool_namespaced(tmp_path: Path):
    servers = {"one": faulty_server(), "two": faulty_server()}
    async with fake_gateway(tmp_path, servers, mode="passthrough") as (_, client):
        names = sorted(tool.name for tool in (await client.list_tools()).tools)
    assert names == sorted(f"{s}__{t}" for s in ("one", "two") for t in ("echo", "grow", "pid", "sleep"))


async def test_passthrough_call_reaches_the_upstream(tmp_path: Path):
    async with running_gateway(make_config(tmp_path, {"one": faulty()}, mode="passthrough")) as (_, client):
        result = await client.call_tool("one__echo", {"text": "hello"})
    assert not result.is_error and text_of(result) == "hello"


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_routed_mode_serves_meta_tools_and_pinned_tools(tmp_path: Path, era: str):
    servers = {"one": faulty_server()}
    async with fake_gateway(tmp_path, servers, era=era, mode="routed", pinned=["one__echo"]) as (_, client):
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert names == ["search_tools", "call_tool", "describe_tool", "run", "one__echo"]
        found = await client.call_tool("search_tools", {"query": "sleep for some seconds", "k": 2})
        assert found.structured_content["tools"][0]["name"] == "one__sleep"
        assert text_of(found).splitlines()[0] == "one__sleep(seconds: float) - Sleep, then answer"
        called = await client.call_tool("call_tool", {"name": "one__echo", "arguments": {"text": "via meta"}})
        assert text_of(called) == "via meta"
        pinned = await client.call_tool("one__echo", {"text": "pinned"})
        assert text_of(pinned) == "pinned"


async def test_describe_tool_gives_the_full_schema(tmp_path: Path):
    async with fake_gateway(tmp_path, {"one": faulty_server()}, mode="routed") as (_, client):
        result = await client.call_tool("describe_tool", {"name": "one__echo"})
    described = result.structured_content
    assert described["inputSchema"]["required"] == ["text"]
    assert described["server"] == "one" and described["signature"].startswith("one__echo(text: str)")


async def test_auto_mode_switches_to_routed_above_the_threshold(tmp_path: Path):
    servers = {"one": faulty(), "two": faulty()}
    async with running_gateway(make_config(tmp_path, servers, mode="auto", auto_threshold=8)) as (gateway, client):
        assert gateway.mode == "passthrough" and len((await client.list_tools()).tools) == 8
    async with running_gateway(make_config(tmp_path, servers, mode="auto", auto_threshold=7)) as (gateway, client):
        assert gateway.mode == "routed" and (await client.list_tools()).tools[0].name == "search_tools"


async def test_invalid_arguments_come_back_as_an_error_the_model_can_fix(tmp_path: Path):
    async with fake_gateway(tmp_path, {"one": faulty_server()}, mode="routed") as (_, client):
        result = await client.call_tool("call_tool", {"name": "one__echo", "arguments": {"txt": "typo"}})
    assert result.is_error
    assert "'text' is a required property" in text_of(result)


async def test_unknown_tool_suggests_the_closest_names(tmp_path: Path):
    async with running_gateway(make_config(tmp_path, {"one": faulty()}, mode="routed")) as (_, client):
        result = await client.call_tool("call_tool", {"name": "one_echo", "arguments": {}})
    assert result.is_error and "Did you mean: one__echo?" in text_of(result)


async def test_upstream_tool_list_change_refreshes_the_catalog(tmp_path: Path):
    async with running_gateway(make_config(tmp_path, {"one": faulty()}, mode="passthrough")) as (gateway, client):
        await client.call_tool("one__grow", {"name": "late_tool"})
        with anyio.fail_after(5):
            while "one__late_tool" not in gateway.catalog:
                await anyio.sleep(0.05)
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert "one__late_tool" in names
        assert text_of(await client.call_tool("one__late_tool", {})) == "I am late_tool"


async def test_clients_are_told_when_an_upstream_tool_list_changes(tmp_path: Path):
    from mcp import Client

    from nexus_gateway.gateway import Gateway
    from nexus_gateway.server.app import build_server

    told = anyio.Event()

    async def handler(message: object) -> None:
        if type(message).__name__ == "ToolListChangedNotification":
            told.set()

    async with Gateway(make_config(tmp_path, {"one": faulty()}, mode="passthrough")) as gateway:
        await gateway.wait_ready()
        async with Client(build_server(gateway), mode="legacy", cache=None, message_handler=handler) as client:
            await client.list_tools()  # a request made earlier: the client is known from then on
            await client.call_tool("one__grow", {"name": "late_tool"})
            with anyio.fail_after(5):  # a client never told fails here
                await told.wait()
    assert told.is_set()


async def test_search_marks_the_first_result_automatic_only_when_the_margin_clears_tau(tmp_path: Path):
    from nexus_gateway.gateway import Gateway
    from nexus_gateway.routing.embedders import make_embedder
    from nexus_gateway.routing.hybrid import HybridRetriever

    config = make_config(tmp_path, {"one": faulty()}, mode="routed")
    for tau, expected in ((0.0, True), (float("inf"), False)):
        retriever = HybridRetriever(make_embedder("hashing"))
        retriever.tau = tau
        async with Gateway(config, retriever=retriever) as gateway:
            await gateway.wait_ready()
            results = await gateway.search("echo the text back unchanged", 3)
        assert results[0].name == "one__echo"
        assert results[0].automatic is expected and not any(r.automatic for r in results[1:])


async def test_a_passthrough_gateway_indexes_only_when_searched(tmp_path: Path):
    async with running_gateway(make_config(tmp_path, {"one": faulty()}, mode="passthrough")) as (gateway, client):
        assert gateway.indexer.searchable == 0  # nothing embedded at start-up: passthrough never routes
        result = await client.call_tool("search_tools", {"query": "echo the text back"})
    assert text_of(result).startswith("one__echo(") and gateway.indexer.current
