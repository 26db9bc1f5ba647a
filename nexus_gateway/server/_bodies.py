"""A POST to /mcp (or to SSE's /messages/) that is no valid JSON-RPC message is answered with its own id.

The SDK's streamable-HTTP entries (the session transport of the handshake era and the per-request
entry of 2026-07-28) answer a body that fails validation (say `params` given as a list) with an error
whose id is `null`, although the request's id can be read, so the client never learns which of its
requests failed. This wrapper validates the body first and answers such a request itself, with the id
it carries (`_rejects.rejection`, as stdio does: a body nested too deep to parse too); everything else,
bodies whose id cannot be read included, goes on to the SDK untouched. SSE's POST endpoint answers with a
plain-text 400 and no id; wrapped alike, its 400 carries the JSON-RPC error with the id. A client that goes
away before its body is complete gets one log line, not the traceback the SDK's read of the body left.
"""

from __future__ import annotations

import logging

import mcp_types as types
from pydantic import ValidationError
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nexus_gateway.server._rejects import rejection

logger = logging.getLogger(__name__)


class AnswerInvalidBodies:
    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body, messages = await _read(receive, self.max_bytes)
        if messages[-1]["type"] == "http.disconnect":  # the client left mid-body: no one to answer
            size = sum(len(message.get("body", b"")) for message in messages)
            logger.info(
                "a client went away after %d bytes of its request body to %s; nothing answered", size, scope["path"]
            )
            return
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
