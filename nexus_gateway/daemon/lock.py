"""The lock that keeps one daemon per state folder: an exclusive `flock` on `daemon.lock`, held for the
daemon's whole life and released by the kernel however the process ends (a crash leaves no stale lock).

Shims probe the lock (`lock_held`) to tell whether a daemon runs; a probe holds it for an instant, so a
daemon starting at that moment retries for a short while before it concludes another one runs. The file
itself is never removed: removing a lock file lets two processes lock two different files.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from nexus_gateway.errors import DaemonRunning

ACQUIRE_PATIENCE = 1.0
"""Seconds a starting daemon retries a lock that is held (a shim's probe lasts microseconds)."""


def _open(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)


def lock_held(path: Path) -> bool:
    """Whether some process holds the lock at `path` now."""
    try:
        fd = _open(path)
    except FileNotFoundError:
        return False  # no folder yet: nothing runs
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases a lock we took
    return False


class DaemonLock:
    """`with DaemonLock(path):` holds the lock or raises `DaemonRunning`."""

    def __init__(self, path: Path, *, patience: float = ACQUIRE_PATIENCE) -> None:
        self.path = path
        self.patience = patience
        self._fd: int | None = None

    def __enter__(self) -> DaemonLock:
        fd = _open(self.path)
        deadline = time.monotonic() + self.patience
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise DaemonRunning(
                        f"a daemon already runs for {self.path.parent} (stop it with `nexus-gateway daemon stop`)"
                    ) from None
                time.sleep(0.02)
        self._fd = fd
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
