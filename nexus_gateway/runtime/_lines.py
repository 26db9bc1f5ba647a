"""Newline framing of an upstream's stdout, linear in the bytes read, with a cap on a line's length.

`LineFramer.feed(chunk)` returns the lines a chunk completes. A line grows in one `bytearray`
(amortized linear; no final join, which for 40 MB would hold the event loop for 0.1 s): re-joining
the buffer on every chunk (what the SDK's stdio client does) costs time quadratic in the line, half a
minute for a 42 MB result. A line that grows
past `max_bytes` stops being kept: its pieces are dropped at once, the rest of it is only counted,
and when its newline arrives it comes out as `Oversized` with its size and its first and last few
kilobytes, which is enough to find the id of the JSON-RPC response it carried.

`EarlyLines` hands a whole line over the moment the pipe delivers it, before the reading task's turn.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
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
        return response_id(self.head, self.tail)


def response_id(head: bytes | bytearray, tail: bytes | bytearray) -> int | str | None:
    """The id of the JSON-RPC response a line that starts with `head` and ends with `tail` carries, read
    without parsing the line (it may be too long, or nest too deep, to parse); None when it is no response."""
    start = _RESPONSE_HEAD.match(head)
    if start is None:
        return None
    found = start.group(1) or ((end := _ID_TAIL.search(tail)) and end.group(1))
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

    @property
    def between_lines(self) -> bool:
        """Whether every line fed so far is complete (nothing of a next line is held)."""
        return self._size == 0

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


Offer = Callable[[bytes], bool | None]
"""Handed a whole line (with its newline) the moment it arrives: True when it took the line, False when it
looked at it and left it (it is read as usual, marked as offered), None when it did not look."""


class EarlyLines:
    """Lines offered from the pipe's callback, ahead of the task that reads `reader` with a `LineFramer`.

    Read the usual way, a line waits for the reading task's next turn of the event loop and passes through
    the stream reader and the framer: on a proxied call that costs about as much as the gateway's own work on
    it. While that task waits in `reader.read()` (so the reader holds nothing) with its framer between lines
    and every line read so far handled, a chunk that is exactly one whole line is offered before it is
    buffered. Anything else, and any chunk once one has been buffered, is fed to the reader as before, so
    lines are never handled out of the order they came in. The reading task calls `waiting` before each
    read, `woke` after it, and `offered` for each line the framer gives it."""

    def __init__(self, reader: asyncio.StreamReader, offer: Offer) -> None:
        self._feed = reader.feed_data
        self._offer = offer
        self._idle = False
        self._offered = False
        reader.feed_data = self._feed_data  # type: ignore[method-assign,assignment]

    def _feed_data(self, data: bytes) -> None:
        if self._idle and data.find(b"\n") == len(data) - 1:
            verdict = self._offer(data)
            if verdict:
                return
            self._offered = verdict is False
        self._idle = False
        self._feed(data)

    def waiting(self, framer: LineFramer) -> None:
        """The reading task is about to wait for data, every line it has read handled."""
        self._idle = framer.between_lines

    def woke(self) -> None:
        self._idle = False

    def offered(self) -> bool:
        """Whether the line the framer gives now (the first since the task woke) was offered already."""
        offered, self._offered = self._offered, False
        return offered
