"""What the gateway needs of the MCP SDK that the SDK has no public way to give (mcp 2.3). One place, so an
SDK upgrade is one file to look at.

- `client_connection`: a low-level handler's `ServerRequestContext` carries a `ServerSession` built anew for
  every request, so it cannot key anything per client; the `Connection` behind it lives as long as the client
  does. The SDK's `Context` exposes it as `.connection`, but low-level handlers get no `Context`.
- `create_mcp_http_client`: the httpx client with the SDK transports' own timeouts (30 s, 300 s read for
  event streams), for remote upstreams that need headers. Public in name, but in a private module.
- `QuietJSONTransport`: the streamable-HTTP transport answers a whole session with JSON or with SSE; the
  gateway chooses per request (JSON when nothing will stream), which takes the transport's private plumbing.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from http import HTTPStatus
from typing import Any

import anyio
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http import REQUEST_STREAM_BUFFER_SIZE, EventMessage, StreamableHTTPServerTransport
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.message import SessionMessage
from mcp_types import INTERNAL_ERROR, JSONRPCError, JSONRPCRequest, JSONRPCResponse, jsonrpc_message_adapter
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

__all__ = ["QuietJSONTransport", "client_connection", "create_mcp_http_client"]


def client_connection(ctx: ServerRequestContext[Any]) -> Connection:
    """The connection of the client that sent this request: it lives as long as the client does."""
    return ctx.session._connection


class QuietJSONTransport(StreamableHTTPServerTransport):
    """The SDK's streamable-HTTP session transport, answering with one `application/json` body the requests
    `quiet(message)` says nothing will stream for, and with an SSE stream the others (as the SDK's
    transport has one mode for a whole session, set when it is made). `quiet` sees every request this session
    posts, in order (one `quiet` per session): it may note what the host said of itself (initialize, log level).

    A quiet request rides the SDK's own plumbing (its request stream, the router that fills it, the answer the
    transport writes for a cancelled request); only its first response-shaped message becomes the body, and
    anything else addressed to the request is dropped (which is why only requests that send nothing else are
    quiet), with `can_send_request` off as in the SDK's JSON mode."""

    def __init__(self, *args: Any, quiet: Quiet, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._quiet = quiet

    async def _handle_post_request(self, scope: Scope, request: Request, receive: Receive, send: Send) -> None:
        body = await request.body()  # starlette keeps it: the SDK's own read below gets the same bytes
        try:
            message = jsonrpc_message_adapter.validate_json(body, by_name=False)
        except ValueError:
            message = None
        if (
            not isinstance(message, JSONRPCRequest)
            or not self._quiet(message)
            or message.method == "initialize"
            or self._read_stream_writer is None
            or not self._check_content_type(request)
            or "application/json" not in request.headers.get("accept", "")
        ):
            await super()._handle_post_request(scope, request, receive, send)
            return
        if not await self._validate_request_headers(request, send):
            return
        request_id = str(message.id)
        self._request_streams[request_id] = anyio.create_memory_object_stream[EventMessage](REQUEST_STREAM_BUFFER_SIZE)
        reader = self._request_streams[request_id][1]
        metadata = self._message_metadata(
            request, on_request_unanswered=partial(self._terminate_unanswered_request, message.id)
        )
        metadata.can_send_request = False
        try:
            await self._read_stream_writer.send(SessionMessage(message, metadata=metadata))
            while True:
                answer = (await reader.receive()).message
                if isinstance(answer, JSONRPCResponse | JSONRPCError):
                    break
            response = self._create_json_response(answer)
        except (anyio.EndOfStream, anyio.ClosedResourceError):  # the session ended with the request in flight
            response = self._create_error_response(
                "Session terminated before the request completed", HTTPStatus.INTERNAL_SERVER_ERROR, INTERNAL_ERROR
            )
        finally:
            await self._clean_up_memory_streams(request_id)
        await response(scope, receive, send)


Quiet = Callable[[JSONRPCRequest], bool]
