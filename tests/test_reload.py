"""Hot reload: the running gateway follows its config file while clients stay connected."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.subscriptions import ToolsListChanged

from nexus_gateway.bench._serve import start_http
from tests.conftest import faulty, text_of

ERAS = ["legacy", "auto"]


def write_atomically(path: Path, text: str) -> None:
    """As editors save: a new file renamed over the old one."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def config_text(tmp: Path, servers: dict[str, Any]) -> str:
    nexus = {"state_dir": str(tmp / "state"), "embedder": "hashing", "mode": "passthrough"}
    return json.dumps({"mcpServers": servers, "nexus": nexus})


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[tuple[Path, str, list[str]]]:
    config = tmp_path / "gateway.json"
    servers = {"keep": faulty("--name", "keep"), "change": faulty("--name", "change"), "drop": faulty("--name", "drop")}
    config.write_text(config_text(tmp_path, servers))
    lines: list[str] = []
    proc, url = start_http(config, stderr_lines=lines)
    yield config, url, lines
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=15)


@asynccontextmanager
async def hearing_tool_changes(client: Client, era: str, heard: anyio.Event) -> AsyncIterator[None]:
    """Set `heard` when the gateway says its tool list changed (a notification, or the modern listen stream)."""
    if era == "legacy":
        yield  # the client's message handler sets it
        return
    async with client.listen(tools_list_changed=True) as events, anyio.create_task_group() as tg:

        async def listen() -> None:
            async for event in events:
                if event == ToolsListChanged():
                    heard.set()

        tg.start_soon(listen)
        yield
        tg.cancel_scope.cancel()


def message_handler(heard: anyio.Event) -> Callable[[Any], Any]:
    async def handle(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            heard.set()

    return handle


async def names(client: Client) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}


async def pid(client: Client, server: str) -> str:
    return text_of(await client.call_tool(f"{server}__pid", {}))


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_an_edited_config_adds_removes_and_restarts_servers_and_leaves_the_others_running(
    gateway: tuple[Path, str, list[str]], era: str
):
    config, url, lines = gateway
    heard = anyio.Event()
    with anyio.fail_after(90):
        async with Client(f"{url}/mcp", mode=era, cache=None, message_handler=message_handler(heard)) as client:
            assert {"keep__echo", "change__echo", "drop__echo"} <= await names(client)
            kept, changed = await pid(client, "keep"), await pid(client, "change")
            async with hearing_tool_changes(client, era, heard):
                servers = {
                    "keep": faulty("--name", "keep"),
                    "change": faulty("--name", "change", env={"EDITED": "1"}),
                    "new": faulty("--name", "new"),
                }
                write_atomically(config, config_text(config.parent, servers))
                await heard.wait()
            while not ({"keep__echo", "change__echo", "new__echo"} <= (now := await names(client))) or any(
                name.startswith("drop__") for name in now
            ):
                await anyio.sleep(0.05)
            assert await pid(client, "keep") == kept  # untouched: the same process
            assert await pid(client, "change") != changed  # restarted with its new entry
            assert text_of(await client.call_tool("new__echo", {"text": "added"})) == "added"
            gone = await client.call_tool("drop__echo", {"text": "x"})
    assert gone.is_error
    assert any("config reloaded: +new -drop ~change" in line for line in lines)


@pytest.mark.anyio
async def test_a_broken_edit_is_rejected_with_one_log_line_and_the_old_config_keeps_running(
    gateway: tuple[Path, str, list[str]],
):
    config, url, lines = gateway
    with anyio.fail_after(60):
        async with Client(f"{url}/mcp", mode="legacy", cache=None) as client:
            before, kept = await names(client), await pid(client, "keep")
            write_atomically(config, '{"mcpServers": {"keep": {"command": ')
            while not (rejected := [line for line in lines if "config reload rejected" in line]):
                await anyio.sleep(0.05)
            assert await names(client) == before
            assert await pid(client, "keep") == kept
        async with httpx.AsyncClient() as http:
            health = (await http.get(f"{url}/healthz")).json()
    assert health["upstreams"] == {"keep": "healthy", "change": "healthy", "drop": "healthy"}
    assert len(rejected) == 1 and "invalid JSON" in rejected[0]
