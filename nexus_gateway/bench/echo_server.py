"""A minimal upstream for latency benchmarks: one `echo` tool, over stdio."""

from __future__ import annotations

from mcp.server import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("echo")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str, repeat: int = 1) -> str:
    """Return the text, repeated."""
    return text * repeat


if __name__ == "__main__":
    server.run()
