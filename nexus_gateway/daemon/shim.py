"""`nexus-gateway connect`: what a host launches over stdio. It attaches to the daemon and relays bytes.

    host --stdio--> connect --daemon.sock--> daemon (one gateway, one set of upstreams, one model)

1. Connect to `<state_dir>/daemon/daemon.sock`. When nothing answers and no daemon holds the lock, start
   `nexus-gateway daemon --config FILE` detached (its own session, so it outlives this host; its output
   appended to `daemon.log`), then retry until it listens, at most `wait` seconds. Two shims starting at
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
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path

import anyio

from nexus_gateway import preamble
from nexus_gateway._stdio_fds import stdio_are_pipes, stdio_pipes
from nexus_gateway.daemon.locate import DaemonFiles
from nexus_gateway.errors import DaemonError

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
    try:
        return await asyncio.open_unix_connection(str(files.socket), limit=CHUNK)
    except (FileNotFoundError, ConnectionRefusedError):
        return None


async def attach(
    files: DaemonFiles, config: Path, *, wait: float = START_WAIT
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to the daemon's socket, starting the daemon when none runs."""
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
                await anyio.sleep(delay)
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


@asynccontextmanager
async def _stdio() -> AsyncIterator[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    if not stdio_are_pipes():
        raise DaemonError("connect relays stdin and stdout, which must be pipes (as when a host launches it)")
    async with stdio_pipes(CHUNK) as streams:
        yield streams


async def _pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter, half_close: bool) -> None:
    """Copy until EOF; then half-close `sink` (the socket) or close it (stdout)."""
    try:
        while data := await source.read(CHUNK):
            sink.write(data)
            await sink.drain()
    except (ConnectionError, RuntimeError):
        pass  # the far side is gone: what follows closes the rest
    if half_close and sink.can_write_eof() and not sink.is_closing():
        with suppress(OSError):
            sink.write_eof()
    else:
        sink.close()


async def connect(files: DaemonFiles, config: Path, *, profile: str | None, wait: float = START_WAIT) -> None:
    """Attach this process's stdio to the daemon (starting it if need be) until either side closes."""
    async with _stdio() as (stdin, stdout):
        reader, writer = await attach(files, config, wait=wait)
        try:
            number = await hello(reader, writer, profile)
            logger.info("attached to the daemon at %s as client %d", files.socket, number)
            async with anyio.create_task_group() as tg:
                tg.start_soon(_pump, stdin, writer, True)
                await _pump(reader, stdout, False)  # the daemon closed: nothing more will come
                tg.cancel_scope.cancel()
        finally:
            writer.close()
