"""A handshake-era POST to /mcp that is no valid JSON-RPC message is answered with its own id.

The SDK's streamable-HTTP transport answers a body that fails validation (say `params` given as a list)
with an error whose id is `null`, although the request's id can be read, so the client never learns
which of its requests failed. This wrapper validates the body first and answers such a request itself,
with the id it carries (`_rejects.rejection`, as stdio does); everything else, unparseable bodies
included, goes on to the transport untouched. Modern-era (2026-07-28) POSTs are answered by the SDK's
own per-request entry, which already carries the id.
"""

from __future__ import annotations

import mcp_types as types
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nexus_gateway.server._rejects import rejection

_VERSION_HEADER = MCP_PROTOCOL_VERSION_HEADER.lower().encode()


class AnswerInvalidBodies:
    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not _handshake_era(scope):
            await self.app(scope, receive, send)
            return
        body, messages = await _read(receive, self.max_bytes)
        if body is not None:
            try:
                types.jsonrpc_message_adapter.validate_json(body, by_name=False)
            except ValidationError:
                reply = rejection(body)
                if reply is not None and reply.id is not None:
                    text = reply.model_dump_json(by_alias=True, exclude_unset=True)
                    await Response(text, status_code=400, media_type="application/json")(scope, receive, send)
                    return

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)


def _handshake_era(scope: Scope) -> bool:
    """The SDK's own rule: no version header, or a handshake-era one, goes to the session transport."""
    version = next((value.decode("latin-1") for key, value in scope["headers"] if key == _VERSION_HEADER), None)
    return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS


async def _read(receive: Receive, max_bytes: int) -> tuple[bytes | None, list[Message]]:
    """(the whole body, or None past `max_bytes` or on disconnect; the messages read, to replay)."""
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return None, messages
        size += len(message.get("body", b""))
        if size > max_bytes:
            return None, messages  # the transport's own limit answers 413
        if not message.get("more_body", False):
            return b"".join(m.get("body", b"") for m in messages), messages
