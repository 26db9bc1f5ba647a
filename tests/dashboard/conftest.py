"""One real gateway over HTTP for the dashboard's tests, and what clients did through it.

Upstreams: `local` and `mirror` (tests/servers/faulty_server.py) whose `echo` changed since it was pinned
(so it is quarantined), `time` (mcp-server-time, for `run`), and `broken`, whose command does not exist.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from nexus_gateway.catalog import Catalog
from nexus_gateway.catalog.pins import PinStore
from tests.conftest import FAULTY, faulty, start_gateway_http, write_config

TOKEN = "dashboard-s3cret"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
QUARANTINED = ("local__echo", "mirror__echo")
T = TypeVar("T")


def wait_until(check: Callable[[], T | None], seconds: float = 30) -> T:
    """`check()`'s first answer that is not None, asked again until then, for `seconds` at most."""

    async def poll() -> T:
        with anyio.fail_after(seconds):
            while (value := await anyio.to_thread.run_sync(check)) is None:
                await anyio.sleep(0.05)
            return value

    return anyio.run(poll)


@dataclass(frozen=True)
class Served:
    url: str
    state: Path


async def _listed(*args: str) -> list[dict[str, Any]]:
    """The tools faulty_server.py lists with `args`, in wire form, from the real server."""
    params = StdioServerParameters(command=sys.executable, args=[FAULTY, *args])
    with anyio.fail_after(30):
        async with Client(params, mode="legacy", cache=None) as client:
            tools = (await client.list_tools()).tools
    return [tool.model_dump(by_alias=True, mode="json", exclude_none=True) for tool in tools]


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("dashboard")
    state = tmp / "state"
    catalog = Catalog(PinStore(state / "pins.json"))  # what an earlier gateway pinned: echo as it was
    tools = anyio.run(_listed)
    for server in ("local", "mirror"):
        catalog.replace_server(server, tools)
    servers = {
        "local": faulty("--poison", "description"),
        "mirror": faulty("--poison", "description"),
        "time": TIME,
        "broken": {"command": "no-such-server"},
    }
    config = write_config(tmp, servers, mode="routed", auth_tokens=[TOKEN], state_dir=str(state))
    proc, url = start_gateway_http(config)
    try:
        yield Served(url, state)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)


@asynccontextmanager
async def mcp_client(url: str, *, era: str = "legacy", transport: str = "streamable-http") -> AsyncIterator[Client]:
    """An MCP client of the gateway with the bearer token (`era`: `legacy` or `auto` for the modern one)."""
    if transport == "sse":
        async with Client(sse_client(f"{url}/sse", headers=BEARER), mode="legacy", cache=None) as client:
            yield client
        return
    async with (
        create_mcp_http_client(headers=BEARER) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=era, cache=None) as client,  # type: ignore[arg-type]
    ):
        yield client


@dataclass(frozen=True)
class Activity:
    run: dict[str, Any]
    """The structured content of the one `run` made."""


@pytest.fixture(scope="session")
def activity(served: Served) -> Activity:
    """Calls made once through the gateway: an echo, one with wrong arguments, and a `run` (the model loads)."""

    async def act() -> dict[str, Any]:
        with anyio.fail_after(240):
            async with mcp_client(served.url) as client:
                await client.call_tool("call_tool", {"name": "local__pid", "arguments": {}})
                await client.call_tool("call_tool", {"name": "local__echo", "arguments": {"wrong": 1}})
                result = await client.call_tool("run", {"request": "what time is it in Tokyo?"})
        assert result.structured_content is not None
        return result.structured_content

    return Activity(anyio.run(act))


def signed_in(url: str) -> httpx.Client:
    """An HTTP client holding the dashboard's cookie, as a browser does after opening `/ui?token=...`."""
    http = httpx.Client(base_url=url, follow_redirects=False)
    answer = http.get("/ui/", params={"token": TOKEN})
    assert answer.status_code == 200 and "nexus_ui" in http.cookies, answer.text
    return http
