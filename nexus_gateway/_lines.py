"""Newline framing of an upstream's stdout, linear in the bytes read, with a cap on a line's length.

`LineFramer.feed(chunk)` returns the lines a chunk completes. A line grows in one `bytearray`
(amortized linear; no final join, which for 40 MB would hold the event loop for 0.1 s): re-joining
the buffer on every chunk (what the SDK's stdio client does) costs time quadratic in the line, half a
minute for a 42 MB result. A line that grows
past `max_bytes` stops being kept: its pieces are dropped at once, the rest of it is only counted,
and when its newline arrives it comes out as `Oversized` with its size and its first and last few
kilobytes, which is enough to find the id of the JSON-RPC response it carried.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

_EDGE = 4096
"""Bytes kept from each end of an oversized line."""

_ID = rb'(-?\d+|"(?:[^"\\]|\\.)*")'
# A response starts `{"jsonrpc":"2.0","id":ID,"result":` (Python, Rust, Go SDKs) or `{"result":` with
# the id last (`,"jsonrpc":"2.0","id":ID}`, the TypeScript SDK). Only the outermost object can end a line.
_RESPONSE_HEAD = re.compile(
    rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?(?:"id"\s*:\s*' + _ID + rb'\s*,\s*)?"(?:result|error)"\s*:'
)
_ID_TAIL = re.compile(rb',\s*"id"\s*:\s*' + _ID + rb'\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$')


@dataclass(frozen=True)
class Oversized:
    """A line longer than the cap, already discarded."""

    size: int
    head: bytes
    tail: bytes

    def response_id(self) -> int | str | None:
        """The id of the JSON-RPC response this line carried, or None when it was not a response."""
        head = _RESPONSE_HEAD.match(self.head)
        if head is None:
            return None
        found = head.group(1) or ((tail := _ID_TAIL.search(self.tail)) and tail.group(1))
        if not found:
            return None
        value = json.loads(found)
        return value if isinstance(value, int | str) else None


class LineFramer:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._line = bytearray()
        self._size = 0
        self._head: bytes | None = None  # set while the current line is being skipped
        self._tail = b""

    def feed(self, chunk: bytes) -> list[bytearray | Oversized]:
        """The lines (without their newline) that `chunk` completes; blank lines are dropped."""
        lines: list[bytearray | Oversized] = []
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            self._add(chunk[start:end])
            line = self._finish()
            if isinstance(line, Oversized) or line.strip():
                lines.append(line)
            start = end + 1
        self._add(chunk[start:])
        return lines

    def _add(self, piece: bytes) -> None:
        if not piece:
            return
        self._size += len(piece)
        if self._head is not None:
            self._tail = piece[-_EDGE:] if len(piece) >= _EDGE else (self._tail + piece)[-_EDGE:]
            return
        self._line += piece
        if self._size > self.max_bytes:
            self._head, self._tail = bytes(self._line[:_EDGE]), bytes(self._line[-_EDGE:])
            self._line = bytearray()

    def _finish(self) -> bytearray | Oversized:
        line = self._line if self._head is None else Oversized(self._size, self._head, self._tail)
        self._line, self._size, self._head, self._tail = bytearray(), 0, None, b""
        return line
