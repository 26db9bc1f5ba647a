"""The gateway over stdio: how a host (Claude Desktop, Claude Code, Cursor) launches it."""

from __future__ import annotations

import logging

from nexus_gateway.clients import ClientIdentity, serving_as
from nexus_gateway.gateway import Gateway
from nexus_gateway.server._fastpath import StdioFastPath
from nexus_gateway.server._pipes import stdio_streams
from nexus_gateway.server.app import build_server, initialization_options

logger = logging.getLogger(__name__)


async def serve_stdio(gateway: Gateway, *, profile: str | None = None) -> None:
    """Serve one host over stdin/stdout; it sees `profile` (profiles.py), or everything when None. Every request
    is that host's (`serving_as`): in the modern protocol era each request comes on a connection of its own, and
    `run` would otherwise give each one a session of its own, so a follow-up ("and in Tokyo?") had no history."""
    server = build_server(gateway, profile=profile)
    # The fast path serves the whole gateway only; a profile's host takes the SDK's path (its filter).
    fast = StdioFastPath(gateway, server) if gateway.settings.fast_path and profile is None else None
    try:
        with serving_as(ClientIdentity(profile=profile, transport="stdio")):
            async with stdio_streams(fast) as (read_stream, write_stream):
                await server.run(read_stream, write_stream, initialization_options(server))
    finally:
        if fast is not None:
            direct = sum(upstream.direct.calls for upstream in gateway.pool.upstreams.values() if upstream.direct)
            logger.info("fast path: %d calls served, %d upstream calls sent directly", fast.served, direct)
