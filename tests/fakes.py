"""An in-process fake upstream, for fast unit tests beside the real-process integration tests.

`faulty_server()` is an MCP server built with the SDK's `MCPServer`, with the tools of
tests/servers/faulty_server.py (echo, pid, sleep, grow: the same names, descriptions and schemas).
`fake_gateway` runs the gateway with such servers as its upstreams: each is served over the SDK's memory
streams in the test's own event loop and plugged in through `Gateway(config, transports=...)`, so no process
is spawned and no socket opened; the gateway's upstream supervisor, its `mcp.Client` and everything above it
run as in production. Use the real processes (tests/conftest.py) where the process boundary is the thing
under test: stdio framing, garbage on stdout, crashes and restarts, process groups.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import anyio
from mcp import Client
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.shared.memory import create_client_server_memory_streams
from pydantic import Field

from nexus_gateway.gateway import Gateway
from nexus_gateway.server.app import build_server
from nexus_gateway.upstreams.pool import OpenTransport
from tests.conftest import make_config


def faulty_server(name: str = "faulty") -> MCPServer:
    """tests/servers/faulty_server.py without its faults, in this process (a new one per upstream: `grow`
    changes it)."""
    server = MCPServer(name)

    @server.resource("faulty://about", description="What this server is.")
    def about() -> str:
        return "an upstream with faults"

    @server.tool(description="Return the text unchanged.")
    def echo(text: Annotated[str, Field(description="The text.")]) -> str:
        return text

    @server.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @server.tool()
    async def sleep(seconds: float) -> str:
        """Sleep, then answer."""
        await anyio.sleep(seconds)
        return "woke up"

    @server.tool()
    async def grow(name: str, ctx: Context) -> str:
        """Add a tool named `name` and tell the client the tool list changed."""

        def added() -> str:
            return f"I am {name}"

        server.add_tool(added, name=name, description=f"A tool added at run time: {name}")
        await ctx.session.send_tool_list_changed()
        return f"added {name}"

    return server


@asynccontextmanager
async def in_process(server: MCPServer) -> AsyncIterator[Any]:
    """A client transport to `server`, served over memory streams by a task in the caller's event loop."""
    kernel = server._lowlevel_server  # the SDK's own InMemoryTransport reaches it the same way (no public accessor)
    async with (
        create_client_server_memory_streams() as (client_streams, (read, write)),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(partial(kernel.run, read, write, kernel.create_initialization_options()))
        try:
            yield client_streams
        finally:
            tg.cancel_scope.cancel()


def in_process_upstreams(servers: dict[str, MCPServer]) -> tuple[dict[str, Any], dict[str, OpenTransport]]:
    """Config entries for `servers` (URLs that are never dialled) and the transports that reach them instead."""
    entries = {name: {"url": f"http://{name}.in-process.invalid/mcp"} for name in servers}
    return entries, {name: partial(in_process, server) for name, server in servers.items()}


@asynccontextmanager
async def fake_gateway(
    tmp_path: Path, servers: dict[str, MCPServer], *, era: str = "legacy", **nexus: Any
) -> AsyncIterator[tuple[Gateway, Client]]:
    """`running_gateway` (tests/conftest.py) with in-process upstreams: the gateway, ready, and an MCP client
    talking to its front in memory (`era`: `legacy` or `auto`)."""
    entries, transports = in_process_upstreams(servers)
    async with Gateway(make_config(tmp_path, entries, **nexus), transports=transports) as gateway:
        with anyio.fail_after(10):
            await gateway.wait_ready()
        async with Client(build_server(gateway), mode=era, cache=None) as client:  # type: ignore[arg-type]
            yield gateway, client
