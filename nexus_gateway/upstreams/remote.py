"""The client transports of remote upstreams (SSE and streamable HTTP), with the config's headers and, for a
server that asks for OAuth, the `httpx2.Auth` that signs the gateway in (upstreams/oauth/)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import httpx2
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from nexus_gateway._sdk import create_mcp_http_client
from nexus_gateway.config import RemoteServer


def open_remote(
    spec: RemoteServer, *, timeout: float, auth: httpx2.Auth | None = None
) -> AbstractAsyncContextManager[Any]:
    """Read and write streams to the server `spec` names; `timeout` bounds SSE's HTTP operations."""
    if spec.transport == "sse":
        return sse_client(spec.url, headers=spec.headers or None, timeout=timeout, auth=auth)
    return _streamable_http(spec.url, spec.headers, auth)


@asynccontextmanager
async def _streamable_http(url: str, headers: dict[str, str], auth: httpx2.Auth | None) -> AsyncIterator[Any]:
    async with (
        create_mcp_http_client(headers=headers or None, auth=auth) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams
