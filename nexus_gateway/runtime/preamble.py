"""The one line a client of the daemon's Unix socket sends before anything else, and the daemon's answer.

    shim   -> {"nexus-connect": {"version": 1, "profile": "work"}}       then the MCP stream, both ways
    daemon -> {"nexus-connected": {"version": 1, "client": 3}}
           |  {"nexus-refused": {"message": "..."}}                       and the connection closes

    cli    -> {"nexus-status": {"version": 1}}  daemon -> {"nexus-status": {...}}       (then closes)
    cli    -> {"nexus-stop": {"version": 1}}    daemon -> {"nexus-stop": {"pid": N}}    (then shuts down)

One JSON object a line, with one key naming the kind. Standard library only: the shim imports it.
"""

from __future__ import annotations

import json
from typing import Any

VERSION = 1
CONNECT = "nexus-connect"
CONNECTED = "nexus-connected"
REFUSED = "nexus-refused"
STATUS = "nexus-status"
STOP = "nexus-stop"


class PreambleError(ValueError):
    """A line that is not one preamble object."""


def line(kind: str, body: dict[str, Any] | None = None) -> bytes:
    return json.dumps({kind: {"version": VERSION, **(body or {})}}, separators=(",", ":")).encode() + b"\n"


def parse(raw: bytes) -> tuple[str, dict[str, Any]]:
    """(kind, body) of one preamble line."""
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise PreambleError(f"not JSON: {raw[:80]!r}") from exc
    if not isinstance(value, dict) or len(value) != 1:
        raise PreambleError(f"expected one object with one key, got {raw[:80]!r}")
    ((kind, body),) = value.items()
    if not isinstance(body, dict):
        raise PreambleError(f"the body of {kind!r} is not an object")
    return kind, body
