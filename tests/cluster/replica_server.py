"""The upstream behind each replica of the cluster tests: it says which replica's child it is.

Tools: `echo(text)`, `whoami()` (the NEXUS_TEST_REPLICA its gateway gave it), `hold(marker, seconds)`
(writes `marker` once it has started, then sleeps: a call that is surely in flight), `redefine(description)`
(gives `echo` a new description) and `add(name)` (a new tool), each telling the gateway its tool list changed.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context

server = MCPServer("replica")


def echo(text: str) -> str:
    return text


server.add_tool(echo, name="echo", description="Return the text unchanged.")


@server.tool()
def whoami() -> str:
    """The replica this upstream runs under."""
    return os.environ.get("NEXUS_TEST_REPLICA", "?")


@server.tool()
async def hold(marker: str, seconds: float) -> str:
    """Write `marker`, then sleep `seconds`; return the replica's name."""
    Path(marker).write_text("started")
    await anyio.sleep(seconds)
    return os.environ.get("NEXUS_TEST_REPLICA", "?")


@server.tool()
async def redefine(description: str, ctx: Context) -> str:
    """Give echo a new description."""
    server.remove_tool("echo")
    server.add_tool(echo, name="echo", description=description)
    await ctx.session.send_tool_list_changed()
    return "redefined"


@server.tool()
async def add(name: str, ctx: Context) -> str:
    """Add a tool named `name` that answers its own name."""

    def answer() -> str:
        return name

    server.add_tool(answer, name=name, description=f"The tool {name}, added later.")
    await ctx.session.send_tool_list_changed()
    return "added"


if __name__ == "__main__":
    server.run()
