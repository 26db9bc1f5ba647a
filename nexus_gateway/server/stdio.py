"""The gateway over stdio: how a host (Claude Desktop, Claude Code, Cursor) launches it."""

from __future__ import annotations

from nexus_gateway.gateway import Gateway
from nexus_gateway.server._pipes import stdio_streams
from nexus_gateway.server.app import build_server, initialization_options


async def serve_stdio(gateway: Gateway, *, profile: str | None = None) -> None:
    """Serve one host over stdin/stdout; it sees `profile` (profiles.py), or everything when None."""
    server = build_server(gateway, profile=profile)
    async with stdio_streams() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, initialization_options(server))
