"""Newline framing of an upstream's stdout: linear, capped, and able to name an oversized response; lines
offered from the pipe's callback ahead of the reading task, never out of order."""

import asyncio
import time

import anyio
import pytest

from nexus_gateway.runtime._lines import EarlyLines, LineFramer, Oversized


def test_lines_split_across_chunks_come_out_whole_and_blank_lines_are_dropped():
    framer = LineFramer(1024)
    assert framer.feed(b'{"a":1}\n\n{"b"') == [b'{"a":1}']
    assert framer.feed(b":2") == []
    assert framer.feed(b'}\n{"c":3}\n') == [b'{"b":2}', b'{"c":3}']


def test_a_long_line_is_framed_in_time_linear_in_its_size():
    # 96 MB in 64 KiB chunks. Linear framing copies each byte about twice (well under 0.5 s of CPU);
    # re-joining the buffer on every chunk, as the SDK's stdio client does, copies 77 GB (tens of
    # seconds). The bound sits 20x above the first and far below the second, so load cannot flip it.
    framer = LineFramer(1 << 30)
    chunk = b"x" * 65536
    started = time.process_time()  # CPU time: other jobs on a shared machine do not count
    for _ in range(96 * 16):
        assert framer.feed(chunk) == []
    (line,) = framer.feed(b"\n")
    spent = time.process_time() - started
    assert isinstance(line, bytearray) and len(line) == 96 * 16 * 65536
    assert spent < 4.0, f"framing a 96 MB line took {spent:.1f}s of CPU: not linear"


def test_a_line_over_the_cap_is_dropped_and_the_next_line_is_kept():
    framer = LineFramer(1000)
    first, rest = b'{"jsonrpc":"2.0","id":7,"result":{"text":"' + b"y" * 5000, b"y" * 5000 + b'"}}'
    assert framer.feed(first) == []
    (oversized, after) = framer.feed(rest + b'\n{"jsonrpc":"2.0","id":8,"result":{}}\n')
    assert isinstance(oversized, Oversized) and oversized.size == len(first + rest)
    assert oversized.response_id() == 7
    assert after == b'{"jsonrpc":"2.0","id":8,"result":{}}'


def test_an_oversized_response_with_its_id_last_is_still_named():
    framer = LineFramer(1000)
    (oversized,) = framer.feed(
        b'{"result":{"content":[{"id":1,"text":"' + b"z" * 9000 + b'"}]},"jsonrpc":"2.0","id":"r-9"}\n'
    )
    assert isinstance(oversized, Oversized) and oversized.response_id() == "r-9"


def test_an_oversized_request_or_notification_names_no_response():
    framer = LineFramer(1000)
    lines = framer.feed(b'{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":"' + b"q" * 2000 + b'"}\n')
    lines += framer.feed(
        b'{"jsonrpc":"2.0","method":"notifications/message","params":{"id":4,"x":"' + b"q" * 2000 + b'"}}\n'
    )
    assert [line.response_id() for line in lines if isinstance(line, Oversized)] == [None, None]


class _Reading:
    """A reading task as the gateway's: `reader.read()` through a framer, every line it gets recorded with
    whether it had been offered already; `offered` records what reached the offer, which takes lines that
    start with `take`."""

    def __init__(self, verdict_when_left: bool | None = False) -> None:
        self.reader = asyncio.StreamReader()
        self.framer = LineFramer(1024)
        self.offered: list[bytes] = []
        self.read: list[tuple[bytes, bool]] = []
        self._left = verdict_when_left
        self.early = EarlyLines(self.reader, self._offer)

    def _offer(self, line: bytes) -> bool | None:
        self.offered.append(line)
        return True if line.startswith(b"take") else self._left

    async def run(self) -> None:
        while True:
            self.early.waiting(self.framer)
            chunk = await self.reader.read(1 << 16)
            self.early.woke()
            if not chunk:
                return
            for line in self.framer.feed(chunk):
                self.read.append((bytes(line), self.early.offered()))


async def _settled() -> None:
    for _ in range(5):
        await anyio.lowlevel.checkpoint()


@pytest.mark.anyio
async def test_a_whole_line_arriving_while_the_reader_waits_is_offered_and_a_taken_one_is_never_read():
    reading = _Reading()
    async with anyio.create_task_group() as tg:
        tg.start_soon(reading.run)
        await _settled()
        reading.reader.feed_data(b"take 1\n")
        await _settled()
        reading.reader.feed_data(b"leave 2\n")
        await _settled()
        reading.reader.feed_eof()
    assert reading.offered == [b"take 1\n", b"leave 2\n"]
    assert reading.read == [(b"leave 2", True)]  # left: read as usual, marked so it is not offered twice


@pytest.mark.anyio
async def test_partial_lines_several_lines_and_whatever_follows_a_buffered_chunk_are_not_offered():
    reading = _Reading()
    async with anyio.create_task_group() as tg:
        tg.start_soon(reading.run)
        await _settled()
        reading.reader.feed_data(b"take 1\ntake 2\n")  # two lines in one chunk
        await _settled()
        reading.reader.feed_data(b"take ")  # a partial line...
        await _settled()
        reading.reader.feed_data(b"3\n")  # ...completed: its tail is not a line of its own
        await _settled()
        reading.reader.feed_data(b"plain 4")
        reading.reader.feed_data(b"take 5\n")  # the reader holds a chunk not yet read: not offered either
        await _settled()
        reading.reader.feed_eof()
    assert reading.offered == []
    assert reading.read == [(b"take 1", False), (b"take 2", False), (b"take 3", False), (b"plain 4take 5", False)]


@pytest.mark.anyio
async def test_a_line_the_offer_did_not_look_at_is_read_unmarked_and_order_is_kept():
    reading = _Reading(verdict_when_left=None)
    async with anyio.create_task_group() as tg:
        tg.start_soon(reading.run)
        await _settled()
        reading.reader.feed_data(b"leave 1\n")
        reading.reader.feed_data(b"take 2\n")  # arrives before the task has read line 1: buffered behind it
        await _settled()
        reading.reader.feed_eof()
    assert reading.offered == [b"leave 1\n"]
    assert reading.read == [(b"leave 1", False), (b"take 2", False)]
