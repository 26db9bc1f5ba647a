"""An upstream whose one tool answers with the `_meta` its request carried (trace context tests)."""

from __future__ import annotations

import json

from mcp.server import MCPServer
from mcp.server.mcpserver import Context


def main() -> None:
    server = MCPServer("meta")

    @server.tool()
    def show_meta(text: str, ctx: Context) -> str:
        """Echo the text and the request's _meta."""
        return json.dumps({"text": text, "meta": dict(ctx.request_context.meta or {})})

    server.run("stdio")


if __name__ == "__main__":
    main()
