"""The JSON-RPC error that answers an input line which is not a valid message.

The SDK's server loop drops what its transport could not parse, so a host that sent a malformed
request would wait forever for an answer. JSON-RPC 2.0 says: a line that is not JSON gets a parse
error, and anything else that is not a valid request gets an invalid-request error; both carry the
request's id when one can be read, and `null` when not.

A line nested deeper than the gateway reads (`_json.MAX_DEPTH`) is answered with a parse error that says
so, carrying the id of the request when its top level names one: that is read without parsing what is
nested (`_top_level`), so however deep the line, the host learns which of its requests failed.
"""

from __future__ import annotations

import json
import re
from typing import Any

import mcp_types as types

from nexus_gateway.runtime import _json

_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')
_VALUE = re.compile(rb'\s*:\s*(-?\d+(?![.\deE])|"(?:[^"\\]|\\.)*")')
_SCAN_TOKENS = 200_000
"""Tokens `_top_level` reads at most (a few tens of milliseconds) before it gives up on the id."""


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
    data = line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line
    try:
        message = _json.loads(data)
    except _json.TooDeep:
        top = _top_level(data)
        if "method" not in top and ("result" in top or "error" in top):
            return None
        text = f"Parse error: the message nests more than {_json.MAX_DEPTH} levels deep."
        error = types.ErrorData(code=types.PARSE_ERROR, message=text)
        return types.JSONRPCError(jsonrpc="2.0", id=_readable_id(top) if "method" in top else None, error=error)
    except (ValueError, RecursionError, MemoryError):
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


def _top_level(data: bytes | bytearray) -> dict[str, Any]:
    """The members of the JSON object `data` whose values are numbers or strings, keys `id`, `method`,
    `result` and `error` only (`result` and `error` as True, whatever their value), read without parsing
    what is nested; empty when `data` is no object or is too long to scan."""
    found: dict[str, Any] = {}
    depth = 0
    for count, token in enumerate(_TOKEN.finditer(data)):
        if count == _SCAN_TOKENS:
            return {}
        text = token.group()
        if text in (b"[", b"{"):
            depth += 1
        elif text in (b"]", b"}"):
            depth -= 1
        elif depth == 1 and (value := _VALUE.match(data, token.end())) is not None:
            key = text[1:-1].decode("utf-8", "replace")
            if key in ("id", "method"):
                found.setdefault(key, json.loads(value.group(1)))
        elif depth == 1 and text in (b'"result"', b'"error"') and data[token.end() :].lstrip()[:1] == b":":
            found.setdefault(text[1:-1].decode(), True)
    return found
