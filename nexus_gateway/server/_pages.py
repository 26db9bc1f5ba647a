"""Pages of a list result (tools, resources, templates, prompts), with opaque cursors.

A cursor names the offset of the next page; it is base64url text so a client treats it as opaque.
The lists change only when an upstream's do, and then the gateway tells clients to list again.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any, TypeVar

import mcp_types as types
from mcp.shared.exceptions import MCPError

T = TypeVar("T")

_PREFIX = "nexus:"


def _encode(offset: int) -> str:
    return base64.urlsafe_b64encode(f"{_PREFIX}{offset}".encode()).decode().rstrip("=")


def _decode(cursor: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        text = ""
    offset = text.removeprefix(_PREFIX)
    if not text.startswith(_PREFIX) or not offset.isdigit():
        raise MCPError(code=types.INVALID_PARAMS, message=f"Invalid cursor {cursor!r}: list again without one.")
    return int(offset)


def page(items: Sequence[T], cursor: str | None, size: int) -> tuple[list[T], str | None]:
    """The page of `items` that `cursor` points at (the first without one) and the next page's cursor."""
    start = 0 if cursor is None else _decode(cursor)
    end = start + size
    return list(items[start:end]), (_encode(end) if end < len(items) else None)


def page_result(
    key: str, items: Sequence[dict[str, Any]], params: types.PaginatedRequestParams | None, size: int
) -> dict[str, Any]:
    """A list result in wire form (`{key: [...], "nextCursor": ...}`), valid in every protocol era."""
    shown, next_cursor = page(items, params.cursor if params else None, size)
    result: dict[str, Any] = {key: shown, "resultType": "complete"}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return result
