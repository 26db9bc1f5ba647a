"""A call deadline that progress pushes back, up to a hard maximum.

An upstream call may run as long as it keeps reporting progress: each `notifications/progress`
restarts the idle timeout (`call_timeout`), and no call outlives `call_timeout_max`. While the
upstream waits on the host (sampling, elicitation, roots: a person may be typing), the idle
timeout is suspended; the hard maximum still holds.

`CallDeadline` is a cancel scope around the task that waits for the call; `TimerDeadline` keeps the
same rules with a timer of the event loop, for a call no task waits on (the stdio fast path's).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from types import TracebackType
from typing import Protocol

import anyio


class Deadline(Protocol):
    """What the router needs of a call's deadline (`upstream_callbacks.InFlight`)."""

    def progressed(self) -> None: ...
    def paused(self) -> AbstractContextManager[None]: ...


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


class TimerDeadline:
    """`CallDeadline`'s rules for a call no task waits on (`server/_followed.py`): a timer of the event loop,
    and `on_expiry(hard)` called from the loop when it runs out (`hard`: at the hard maximum)."""

    def __init__(self, idle: float, hard: float | None, on_expiry: Callable[[bool], None]) -> None:
        self.idle = idle
        self.hard = max(hard, idle) if hard is not None else math.inf
        self._loop = asyncio.get_running_loop()
        self._on_expiry = on_expiry
        self._hard_at = self._loop.time() + self.hard
        self._paused = 0
        self._over = False
        self._timer: asyncio.TimerHandle | None = None
        self._arm()

    def _arm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        at = self._hard_at if self._paused else min(self._loop.time() + self.idle, self._hard_at)
        self._timer = self._loop.call_at(at, self._expired) if at != math.inf else None

    def _expired(self) -> None:
        self._timer, self._over = None, True
        self._on_expiry(self._loop.time() >= self._hard_at)

    def cancel(self) -> None:
        """The call is over: the timer never fires."""
        self._over = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def progressed(self) -> None:
        if not self._over and not self._paused:
            self._arm()

    @contextmanager
    def paused(self) -> Iterator[None]:
        if self._over:
            yield
            return
        self._paused += 1
        self._arm()
        try:
            yield
        finally:
            self._paused -= 1
            if not self._paused and not self._over:
                self._arm()
