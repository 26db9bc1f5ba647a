"""The upstream behind each replica of the cluster tests: it says which replica's child it is.

Tools: `echo(text)`, `whoami()` (the NEXUS_TEST_REPLICA its gateway gave it), and `hold(marker, seconds)`
(writes `marker` once it has started, then sleeps: a call that is surely in flight).
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
from mcp.server import MCPServer

server = MCPServer("replica")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


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


if __name__ == "__main__":
    server.run()
