"""`nexus-gateway connect`: what a host launches over stdio. It attaches to the daemon and relays bytes.

    host --stdio--> connect --daemon.sock--> daemon (one gateway, one set of upstreams, one model)

1. Connect to `<state_dir>/daemon/daemon.sock`, only when the folder, the socket and the process listening
   are the user's own (peer.py): else refuse, before a byte is sent. When nothing answers and no daemon
   holds the lock, start `nexus-gateway daemon --config FILE` detached (its own session, so it outlives
   this host; its output appended to `daemon.log`), then retry until it listens (a full listen queue is
   tried again too), at most `wait` seconds. Two shims starting at
   once may both start one: the lock lets one run and the other exit, and both shims attach to the winner.
2. Send the preamble (the profile), read the daemon's answer.
3. Relay bytes both ways, unchanged, until either side closes: the host's EOF is passed on as a
   half-close (the daemon finishes and closes), the daemon's close ends the shim.

Only the standard library, anyio and the small modules beside it are loaded: a shim per host stays small.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Protocol

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from nexus_gateway.daemon import peer
from nexus_gateway.daemon.locate import DaemonFiles
from nexus_gateway.errors import DaemonError
from nexus_gateway.runtime import preamble
from nexus_gateway.runtime._stdio_fds import stdio_are_pipes, stdio_pipes

logger = logging.getLogger(__name__)

CHUNK = 1 << 16
START_WAIT = 60.0
"""Default seconds to wait for a daemon that this shim (or another) is starting."""
_LOG_TAIL = 12


def start_daemon(files: DaemonFiles, config: Path) -> subprocess.Popen[bytes]:
    """`nexus-gateway daemon --config CONFIG`, detached: a new session, stdin from /dev/null, output to the log."""
    files.make_folder()
    log = os.open(files.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "nexus_gateway", "daemon", "--config", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )
    finally:
        os.close(log)


def _log_tail(files: DaemonFiles) -> str:
    try:
        lines = files.log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-_LOG_TAIL:])


async def _open(files: DaemonFiles) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
    """Streams to the user's own daemon (peer.py checks the folder, the socket and the listener's uid), or
    None when none listens yet or its queue is full."""
    sock = peer.connect(files)
    if sock is None:
        return None
    return await asyncio.open_unix_connection(sock=sock, limit=CHUNK)


async def attach(
    files: DaemonFiles, config: Path, *, wait: float = START_WAIT
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to the daemon's socket, starting the daemon when none runs; "not yet" (no socket, nothing
    listening, a full queue) is tried again with a growing, jittered pause, at most `wait` seconds in all."""
    peer.check_folder(files)
    opened = await _open(files)
    started: subprocess.Popen[bytes] | None = None
    delay = 0.01
    try:
        with anyio.fail_after(wait):
            while opened is None:
                if started is None and not files.running():
                    logger.info("no daemon runs for %s; starting one (log: %s)", files.folder, files.log)
                    started = start_daemon(files, config)
                if started is not None and started.poll() is not None and not files.running():
                    raise DaemonError(
                        f"the daemon exited with status {started.returncode} before it listened "
                        f"(log: {files.log}):\n{_log_tail(files)}"
                    )
                await anyio.sleep(delay * (0.5 + random.random()))  # jitter: a burst of shims spreads out
                delay = min(delay * 2, 0.2)
                opened = await _open(files)
    except TimeoutError:
        raise DaemonError(
            f"no daemon listened on {files.socket} within {wait:g} s (log: {files.log}):\n{_log_tail(files)}"
        ) from None
    return opened


async def hello(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, profile: str | None) -> int:
    """Send the preamble; the client number the daemon gave this connection."""
    writer.write(preamble.line(preamble.CONNECT, {"profile": profile}))
    await writer.drain()
    try:
        with anyio.fail_after(30):
            kind, body = preamble.parse(await reader.readline())
    except (TimeoutError, preamble.PreambleError, ConnectionError) as exc:
        raise DaemonError(f"the daemon did not accept the connection: {exc}") from None
    if kind != preamble.CONNECTED:
        raise DaemonError(f"the daemon refused the connection: {body.get('message', body)}")
    return int(body.get("client", 0))


class _End(Protocol):
    """One side of the relay: bytes come out of it and go into it."""

    async def read(self) -> bytes: ...

    async def write(self, data: bytes) -> None: ...

    def finish(self) -> None:
        """No more bytes will be written."""


class _Streams:
    """An asyncio stream pair: the daemon's socket (half-closed when done) or stdio pipes (closed)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, half_close: bool) -> None:
        self.reader, self.writer, self.half_close = reader, writer, half_close

    async def read(self) -> bytes:
        return await self.reader.read(CHUNK)

    async def write(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    def finish(self) -> None:
        if self.half_close and self.writer.can_write_eof() and not self.writer.is_closing():
            with suppress(OSError):
                self.writer.write_eof()
        else:
            self.writer.close()


class _Threaded:
    """stdin and stdout that the event loop cannot watch (a TTY, /dev/null, a file): stdin is read by a
    daemon thread (a blocked read must not keep the process from exiting), stdout written in worker threads."""

    def __init__(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[bytes](1)
        self._reading = False

    async def read(self) -> bytes:
        if not self._reading:
            self._reading = True
            token = anyio.lowlevel.current_token()
            threading.Thread(target=self._read_stdin, args=(token,), daemon=True, name="stdin").start()
        return await self._receive.receive()

    def _read_stdin(self, token: anyio.lowlevel.EventLoopToken) -> None:
        while True:
            try:
                data = os.read(0, CHUNK)
            except OSError:
                data = b""
            try:
                anyio.from_thread.run(self._send.send, data, token=token)
            except (RuntimeError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                return  # the relay is over
            if not data:
                return

    async def write(self, data: bytes) -> None:
        await anyio.to_thread.run_sync(_write_all, 1, data)

    def finish(self) -> None:
        with suppress(OSError):
            os.close(1)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


@asynccontextmanager
async def _stdio() -> AsyncIterator[_End]:
    if not stdio_are_pipes():
        yield _Threaded()
        return
    async with stdio_pipes(CHUNK) as (reader, writer):
        yield _Streams(reader, writer, half_close=False)


async def _pump(source: _End, sink: _End) -> None:
    """Copy until EOF, then tell `sink` that nothing more comes."""
    try:
        while data := await source.read():
            await sink.write(data)
    except (ConnectionError, RuntimeError, OSError):
        pass  # the far side is gone: what follows closes the rest
    sink.finish()


async def connect(files: DaemonFiles, config: Path, *, profile: str | None, wait: float = START_WAIT) -> None:
    """Attach this process's stdio to the daemon (starting it if need be) until either side closes."""
    async with _stdio() as host:
        reader, writer = await attach(files, config, wait=wait)
        try:
            number = await hello(reader, writer, profile)
            logger.info("attached to the daemon at %s as client %d", files.socket, number)
            daemon = _Streams(reader, writer, half_close=True)
            async with anyio.create_task_group() as tg:
                tg.start_soon(_pump, host, daemon)
                await _pump(daemon, host)  # the daemon closed: nothing more will come
                tg.cancel_scope.cancel()
        finally:
            writer.close()
