"""Noticing that an upstream process has exited, without waking up to ask.

`stdio_client` must notice an upstream's exit on its own: its stdout may stay open after it exits
(something it started holds the pipe), and asyncio's `process.wait()` waits for that pipe too. It asked
`returncode` four times a second per upstream (176 checks a second for 44 idle upstreams). On Linux (5.3 and
later) a pidfd becomes readable when the process exits, so the event loop wakes once, at the exit;
elsewhere `exited` asks every `poll` seconds, as before.
"""

from __future__ import annotations

import os
from typing import Protocol

import anyio

_REAPED_POLL = 0.01
"""How often to look for the exit status once the process has exited (it is being reaped)."""


class ChildProcess(Protocol):
    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...


async def exited(process: ChildProcess, poll: float) -> int:
    """Return `process`'s exit status once it has exited."""
    fd = _pidfd(process) if process.returncode is None else None
    if fd is not None:
        try:
            await anyio.wait_readable(fd)
        finally:
            os.close(fd)
    while (code := process.returncode) is None:  # noqa: ASYNC110 - the exit itself was awaited above
        await anyio.sleep(poll if fd is None else _REAPED_POLL)
    return code


def _pidfd(process: ChildProcess) -> int | None:
    """A pidfd of `process`, or None where there are none (not Linux, Linux before 5.3, a process gone)."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        fd: int = pidfd_open(process.pid)
    except OSError:
        return None
    return fd
