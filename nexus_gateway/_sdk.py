"""What the gateway needs of the MCP SDK that the SDK has no public way to give (mcp 2.3). One place, so an
SDK upgrade is one file to look at.

- `client_connection`: a low-level handler's `ServerRequestContext` carries a `ServerSession` built anew for
  every request, so it cannot key anything per client; the `Connection` behind it lives as long as the client
  does. The SDK's `Context` exposes it as `.connection`, but low-level handlers get no `Context`.
- `create_mcp_http_client`: the httpx client with the SDK transports' own timeouts (30 s, 300 s read for
  event streams), for remote upstreams that need headers. Public in name, but in a private module.
"""

from __future__ import annotations

from typing import Any

from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.shared._httpx_utils import create_mcp_http_client

__all__ = ["client_connection", "create_mcp_http_client"]


def client_connection(ctx: ServerRequestContext[Any]) -> Connection:
    """The connection of the client that sent this request: it lives as long as the client does."""
    return ctx.session._connection
