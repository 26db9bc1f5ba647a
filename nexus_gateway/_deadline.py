"""A call deadline that progress pushes back, up to a hard maximum.

An upstream call may run as long as it keeps reporting progress: each `notifications/progress`
restarts the idle timeout (`call_timeout`), and no call outlives `call_timeout_max`. While the
upstream waits on the host (sampling, elicitation, roots: a person may be typing), the idle
timeout is suspended; the hard maximum still holds.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

import anyio


class CallDeadline:
    """Use as `with deadline:` around the call; raises `TimeoutError` on exit when it expired."""

    def __init__(self, idle: float, hard: float | None = None) -> None:
        self.idle = idle
        self.hard = max(hard, idle) if hard is not None else math.inf
        self.expired_hard = False
        self._scope: anyio.CancelScope | None = None
        self._hard_at = math.inf
        self._paused = 0

    def __enter__(self) -> CallDeadline:
        now = anyio.current_time()
        self._hard_at = now + self.hard
        self._scope = anyio.CancelScope(deadline=min(now + self.idle, self._hard_at))
        self._scope.__enter__()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        assert self._scope is not None
        suppressed = self._scope.__exit__(exc_type, exc, tb)
        if self._scope.cancelled_caught:
            self.expired_hard = anyio.current_time() >= self._hard_at
            raise TimeoutError
        return bool(suppressed)

    def progressed(self) -> None:
        """The call showed it is alive: restart the idle timeout (never past the hard maximum)."""
        if self._scope is not None and not self._paused:
            self._scope.deadline = min(anyio.current_time() + self.idle, self._hard_at)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Suspend the idle timeout while the call waits on the host; it restarts afterwards."""
        if self._scope is None:
            yield
            return
        self._paused += 1
        self._scope.deadline = self._hard_at
        try:
            yield
        finally:
            self._paused -= 1
            if not self._paused:
                self._scope.deadline = min(anyio.current_time() + self.idle, self._hard_at)
