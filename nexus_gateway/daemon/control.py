"""`nexus-gateway daemon status|stop`: one preamble line to the daemon's socket, one answer back."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import psutil

from nexus_gateway.daemon import peer
from nexus_gateway.daemon.locate import DaemonFiles
from nexus_gateway.errors import DaemonError
from nexus_gateway.runtime import preamble

ANSWER_TIMEOUT = 10.0
STOP_TIMEOUT = 60.0
"""Seconds `stop` waits for the daemon to close its upstreams and let go of its lock."""


async def ask(files: DaemonFiles, kind: str) -> dict[str, Any]:
    """The daemon's answer to a control preamble of `kind`; `DaemonError` when no daemon answers."""
    try:
        with anyio.fail_after(ANSWER_TIMEOUT):
            sock = peer.connect(files)
            if sock is None:
                raise DaemonError(f"nothing listens on {files.socket}")
            reader, writer = await asyncio.open_unix_connection(sock=sock)
            try:
                writer.write(preamble.line(kind))
                await writer.drain()
                answer, body = preamble.parse(await reader.readline())
            finally:
                writer.close()
    except (OSError, TimeoutError, preamble.PreambleError) as exc:
        raise DaemonError(f"the daemon at {files.socket} does not answer: {exc}") from None
    if answer != kind:
        raise DaemonError(f"the daemon refused {kind}: {body.get('message', body)}")
    return body


async def status(files: DaemonFiles) -> dict[str, Any] | None:
    """What the running daemon reports, or None when none runs."""
    if not files.running():
        return None
    return await ask(files, preamble.STATUS)


def _gone(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)  # exited, not yet reaped by its parent
    except psutil.NoSuchProcess:
        return True


async def stop(files: DaemonFiles) -> int | None:
    """Stop the running daemon and wait until it has exited (its upstreams closed, its lock released); its
    pid, or None when none was running."""
    if not files.running():
        return None
    pid = int((await ask(files, preamble.STOP))["pid"])
    with anyio.move_on_after(STOP_TIMEOUT):
        while files.running() or not _gone(pid):  # noqa: ASYNC110 (another process's exit has no event here)
            await anyio.sleep(0.05)
        return pid
    raise DaemonError(f"the daemon (pid {pid}) did not stop within {STOP_TIMEOUT:g} s")
