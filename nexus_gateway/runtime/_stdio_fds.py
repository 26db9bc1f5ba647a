"""The process's stdin and stdout as asyncio streams, read and written on the event loop.

Used by the stdio front (server/_pipes.py) and by the daemon's shim (daemon/shim.py), both launched by a host
with pipes for stdin and stdout. The streams are served from private duplicates of fd 0 and 1, and fd 0 is
pointed at /dev/null and fd 1 at stderr meanwhile, so stray prints (ours, a library's, a child's) can never
corrupt the protocol stream. Standard library only: the shim imports this and little else.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


def is_pipe_or_socket(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def stdio_are_pipes() -> bool:
    """Whether stdin and stdout are pipes or sockets (as when a host launches us), so the event loop can
    serve them; a TTY or a regular file cannot be."""
    return is_pipe_or_socket(0) and is_pipe_or_socket(1)


def _claim(fd: int, diversion: int) -> int:
    """Serve the wire from a private duplicate of `fd`, and point `fd` at `diversion`."""
    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.dup2(diversion, fd)
    return private


@asynccontextmanager
async def stdio_pipes(limit: int) -> AsyncIterator[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    """(reader, writer) over the process's stdin and stdout, which must be pipes or sockets
    (`stdio_are_pipes`); `limit` is the reader's (it holds up to twice that before it stops reading)."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    in_fd = _claim(0, devnull)
    out_fd = _claim(1, 2)
    os.close(devnull)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit)
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(in_fd, "rb", buffering=0)
    )
    write_transport, write_protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(out_fd, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)
    try:
        yield reader, writer
    finally:
        read_transport.close()
        write_transport.close()
