"""A stdio server transport on non-blocking pipes.

The SDK's `stdio_server` reads and writes stdin/stdout through worker threads (anyio.wrap_file): a
thread hop for every line each way, which costs the gateway about a millisecond per proxied call.
When stdin and stdout are pipes or sockets (as when a host launches the gateway), this transport
reads and writes them on the event loop instead. Like the SDK's, it serves the protocol from private
duplicates of fd 0 and 1 and points fd 0 at /dev/null and fd 1 at stderr while serving, so stray
prints (ours, a library's, a child's) can never corrupt the protocol stream. Anything else (a TTY,
a regular file) falls back to the SDK transport.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from nexus_gateway.server._rejects import rejection

logger = logging.getLogger(__name__)

_LINE_LIMIT = 64 * 1024 * 1024


class LineTaker(Protocol):
    """Something that may serve input lines itself before the SDK sees them (`_fastpath.py`)."""

    def attach(self, spawn: Any, write: Any) -> None: ...

    def take(self, line: bytes) -> bool: ...


def _is_pipe_or_socket(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _claim(fd: int, diversion: int) -> int:
    """Serve the wire from a private duplicate of `fd`, and point `fd` at `diversion`."""
    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.dup2(diversion, fd)
    return private


@asynccontextmanager
async def stdio_streams(taker: LineTaker | None = None) -> AsyncIterator[tuple[Any, Any]]:
    """(read_stream, write_stream) for `Server.run`, over the process's stdin and stdout; `taker` sees
    every input line first and may answer it itself (only on pipes: the SDK's transport has no such hook)."""
    if sys.platform == "win32" or not (_is_pipe_or_socket(0) and _is_pipe_or_socket(1)):
        async with stdio_server() as streams:
            yield streams
        return

    devnull = os.open(os.devnull, os.O_RDONLY)
    in_fd = _claim(0, devnull)
    out_fd = _claim(1, 2)
    os.close(devnull)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_LINE_LIMIT)
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(in_fd, "rb", buffering=0)
    )
    write_transport, write_protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(out_fd, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)

    async def write_bytes(data: bytes) -> bool:
        """Write one line; False once the host has closed its end (asyncio raises RuntimeError for a
        write to a transport it has already closed, ConnectionError when the pipe breaks during one)."""
        if writer.is_closing():
            return False
        try:
            writer.write(data)  # the whole line at once: lines written by several tasks never interleave
            await writer.drain()
        except (ConnectionError, RuntimeError):
            return False
        return True

    async def write_line(message: types.JSONRPCMessage) -> bool:
        return await write_bytes(message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")

    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def read_stdin() -> None:
        async with read_writer:
            while True:
                try:
                    line = await reader.readline()
                except (ValueError, asyncio.LimitOverrunError) as exc:
                    logger.error("dropped an input line longer than %d bytes", _LINE_LIMIT)
                    await read_writer.send(exc)
                    continue
                if not line:
                    return  # EOF: the host went away
                if not line.strip():
                    continue
                if taker is not None and taker.take(line):
                    continue
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except ValueError as exc:
                    answer = rejection(line)
                    if answer is None:
                        logger.warning("dropped a malformed response from the host")
                    else:
                        logger.warning(
                            "answered an invalid input line (id %r) with error %d", answer.id, answer.error.code
                        )
                        await write_line(answer)
                    await read_writer.send(exc)
                    continue
                await read_writer.send(SessionMessage(message))

    async def write_stdout() -> None:
        async with write_reader:
            async for session_message in write_reader:
                if not await write_line(session_message.message):
                    return  # the host closed its end

    try:
        async with anyio.create_task_group() as tg:
            if taker is not None:
                taker.attach(tg.start_soon, write_bytes)
            tg.start_soon(read_stdin)
            tg.start_soon(write_stdout)
            yield read_stream, write_stream
            tg.cancel_scope.cancel()
    finally:
        read_transport.close()
        write_transport.close()
