"""The JSON-RPC error that answers an input line which is not a valid message.

The SDK's server loop drops what its transport could not parse, so a host that sent a malformed
request would wait forever for an answer. JSON-RPC 2.0 says: a line that is not JSON gets a parse
error, and anything else that is not a valid request gets an invalid-request error; both carry the
request's id when one can be read, and `null` when not.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types


def _readable_id(message: Any) -> types.RequestId | None:
    if not isinstance(message, dict):
        return None
    request_id = message.get("id")
    if isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool)):
        return request_id
    return None


def rejection(line: bytes | str) -> types.JSONRPCError | None:
    """The error answering `line`, a line that failed JSON-RPC validation; `None` when nothing may answer
    it (a malformed response: JSON-RPC never answers a response)."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        error = types.ErrorData(code=types.PARSE_ERROR, message="Parse error: the line is not JSON.")
        return types.JSONRPCError(jsonrpc="2.0", id=None, error=error)
    if isinstance(message, dict) and "method" not in message and ("result" in message or "error" in message):
        return None
    error = types.ErrorData(
        code=types.INVALID_REQUEST,
        message="Invalid request: not a JSON-RPC 2.0 request (needs 'jsonrpc': '2.0', a string 'method', "
        "an integer or string 'id', and 'params' as an object when present).",
    )
    return types.JSONRPCError(jsonrpc="2.0", id=_readable_id(message), error=error)
