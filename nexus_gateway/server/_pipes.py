"""A stdio server transport on non-blocking pipes, and the line framing it shares with the Unix-socket front.

The SDK's `stdio_server` reads and writes stdin/stdout through worker threads (anyio.wrap_file): a
thread hop for every line each way, which costs the gateway about a millisecond per proxied call.
When stdin and stdout are pipes or sockets (as when a host launches the gateway), this transport
reads and writes them on the event loop instead (`_stdio_fds.stdio_pipes`: from private duplicates
of fd 0 and 1, so stray prints cannot corrupt the protocol stream). Anything else (a TTY, a regular
file) falls back to the SDK transport.

`line_streams` is the framing itself, over any asyncio stream pair: one JSON-RPC message a line, a
malformed line answered (or dropped) without ending the session. The daemon's Unix-socket front
(unix.py) serves each connection through it, so a socket session is a stdio session.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager, suppress
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from nexus_gateway.runtime._lines import EarlyLines, LineFramer, Oversized
from nexus_gateway.runtime._stdio_fds import stdio_are_pipes, stdio_pipes
from nexus_gateway.server._rejects import rejection

logger = logging.getLogger(__name__)

LINE_LIMIT = 64 * 1024 * 1024
_CHUNK = 1 << 20
WRITE_HIGH_WATER = 1 << 16
"""Bytes buffered for the host past which a writer waits for the pipe to drain."""
_CLOSE_WAIT = 5.0
"""Seconds the streams' close waits for cancelled calls to finish (each tells its upstream)."""


class LineTaker(Protocol):
    """Something that may serve input lines itself before the SDK sees them (`_fastpath.py`)."""

    def attach(self, spawn: Any, write: Any, write_now: Any) -> None:
        """`spawn(func, *args)` runs `func(*args)` as a task and returns something with `cancel()`."""
        ...

    def take(self, line: bytes) -> bool: ...

    def close(self) -> None:
        """The streams are closing: end whatever was taken and is still in flight."""
        ...


@asynccontextmanager
async def stdio_streams(taker: LineTaker | None = None) -> AsyncIterator[tuple[Any, Any]]:
    """(read_stream, write_stream) for `Server.run`, over the process's stdin and stdout; `taker` sees
    every input line first and may answer it itself (only on pipes: the SDK's transport has no such hook)."""
    if sys.platform == "win32" or not stdio_are_pipes():
        async with stdio_server() as streams:
            yield streams
        return
    async with stdio_pipes(LINE_LIMIT) as (reader, writer), line_streams(reader, writer, taker) as streams:
        yield streams


@asynccontextmanager
async def line_streams(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, taker: LineTaker | None = None
) -> AsyncIterator[tuple[Any, Any]]:
    """(read_stream, write_stream) for `Server.run`, one JSON-RPC message a line over `reader` and `writer`;
    a line over `LINE_LIMIT` bytes is dropped (not kept) with an error. The read stream ends when the peer
    closes its end. `taker`, when given, sees every input line first and may serve it itself, from the
    pipe's callback when the line arrives while nothing else is waiting to be read (`EarlyLines`)."""

    def write_now(data: bytes) -> bool:
        """Write one line without waiting; False once the host has closed its end (asyncio raises
        RuntimeError for a write to a transport it has already closed)."""
        if writer.is_closing():
            return False
        try:
            writer.write(data)  # the whole line at once: lines written by several tasks never interleave
        except (ConnectionError, RuntimeError):
            return False
        return True

    async def write_bytes(data: bytes) -> bool:
        """Write one line, then wait while the host is slow to read (ConnectionError when the pipe
        breaks meanwhile); False once the host has closed its end."""
        if not write_now(data):
            return False
        if writer.transport.get_write_buffer_size() > WRITE_HIGH_WATER:
            try:
                await writer.drain()  # below the mark the line is in the pipe or the buffer already: no wait
            except (ConnectionError, RuntimeError):
                return False
        return True

    async def write_line(message: types.JSONRPCMessage) -> bool:
        return await write_bytes(message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")

    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    def offer(line: bytes) -> bool | None:
        """A line as it arrives (`EarlyLines`): to the taker at once, unless the host is slow to read its answers."""
        assert taker is not None
        if writer.transport.get_write_buffer_size() > WRITE_HIGH_WATER:
            return None  # read as usual: the reading task waits for the pipe to drain
        return taken(line)

    def taken(line: bytes) -> bool:
        """Whether the taker served `line`; whatever it raises, the line is left to the SDK's server, which
        answers it (nothing a host sends may end the session)."""
        assert taker is not None
        try:
            return taker.take(line)
        except Exception as exc:  # as if left: the SDK's server answers it
            logger.error(
                "the fast path failed on an input line (%s: %s); the SDK's path serves it", type(exc).__name__, exc
            )
            logger.debug("the fast path's failure", exc_info=exc)
            return False

    framer = LineFramer(LINE_LIMIT)
    early = EarlyLines(reader, offer) if taker is not None else None

    async def read_lines() -> None:
        async with read_writer:
            while True:
                if early is not None:
                    early.waiting(framer)
                try:
                    chunk = await reader.read(_CHUNK)
                except ConnectionError:
                    return  # the peer reset the connection: as good as EOF
                finally:
                    if early is not None:
                        early.woke()
                if not chunk:
                    return  # EOF: the host went away
                for line in framer.feed(chunk):
                    await read_line(line, early is not None and early.offered())

    async def read_line(line: bytearray | Oversized, offered: bool) -> None:
        if isinstance(line, Oversized):
            logger.error("dropped an input line longer than %d bytes", LINE_LIMIT)
            await read_writer.send(ValueError(f"an input line of {line.size} bytes is over the limit"))
            return
        if taker is not None and not offered and taken(bytes(line)):
            if writer.transport.get_write_buffer_size() > WRITE_HIGH_WATER:
                with suppress(ConnectionError, RuntimeError):
                    await writer.drain()  # a host slow to read its answers is read more slowly
            return
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except (ValueError, RecursionError) as exc:  # pydantic's ValidationError is a ValueError
            answer = rejection(bytes(line))
            if answer is None:
                logger.warning("dropped a malformed response from the host")
            else:
                logger.warning("answered an invalid input line (id %r) with error %d", answer.id, answer.error.code)
                await write_line(answer)
            await read_writer.send(exc)
            return
        await read_writer.send(SessionMessage(message))

    async def write_lines() -> None:
        async with write_reader:
            async for session_message in write_reader:
                if not await write_line(session_message.message):
                    return  # the host closed its end

    calls = _CallTasks()
    try:
        async with anyio.create_task_group() as tg:
            if taker is not None:
                taker.attach(calls.spawn, write_bytes, write_now)
            tg.start_soon(read_lines)
            tg.start_soon(write_lines)
            yield read_stream, write_stream
            tg.cancel_scope.cancel()
    finally:
        if taker is not None:
            taker.close()
        await calls.aclose()


class _CallTasks:
    """The tasks of the calls a taker serves: plain asyncio tasks (a task group's start costs the hot call
    about a tenth of a millisecond of CPU, which on a busy machine shows in its latency), cancelled and
    waited for when the streams close, as a task group's would be."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(func(*args))
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            logger.error("a call's task failed", exc_info=exc)

    async def aclose(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_WAIT):
                await asyncio.wait(tasks)
