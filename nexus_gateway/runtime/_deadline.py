"""A call deadline that progress pushes back, up to a hard maximum.

An upstream call may run as long as it keeps reporting progress: each `notifications/progress`
restarts the idle timeout (`call_timeout`), and no call outlives `call_timeout_max`. While the
upstream waits on the host (sampling, elicitation, roots: a person may be typing), the idle
timeout is suspended; the hard maximum still holds.

`CallDeadline` is a cancel scope around the task that waits for the call; `TimerDeadline` keeps the
same rules with a timer of the event loop (one the loop's deadlines share), for a call no task waits on
(the stdio fast path's).
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from types import TracebackType
from typing import Protocol

import anyio

logger = logging.getLogger(__name__)


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
    """`CallDeadline`'s rules for a call no task waits on (`server/_followed.py`), and `on_expiry(hard)` called
    from the event loop when it runs out (`hard`: at the hard maximum).

    The deadlines of a loop share one timer (`_Sweep`), armed for the earliest moment one of them may run
    out: a call answered in a millisecond arms and cancels no timer of its own, and progress only moves a
    number (the shared timer, finding the call not due, is armed again for the earliest one)."""

    def __init__(self, idle: float, hard: float | None, on_expiry: Callable[[bool], None]) -> None:
        self.idle = idle
        self.hard = max(hard, idle) if hard is not None else math.inf
        self._sweep = _Sweep.of(asyncio.get_running_loop())
        self._on_expiry = on_expiry
        now = self._sweep.loop.time()
        self._hard_at = now + self.hard
        self._paused = 0
        self._over = False
        self.at = min(now + idle, self._hard_at)
        """When it runs out unless pushed back (what the shared timer compares)."""
        self._sweep.watch(self)

    def _move(self) -> None:
        self.at = self._hard_at if self._paused else min(self._sweep.loop.time() + self.idle, self._hard_at)
        self._sweep.watch(self)

    def expired(self) -> None:
        """Run out (the shared timer found it due)."""
        self._over = True
        self._on_expiry(self.at >= self._hard_at)

    def cancel(self) -> None:
        """The call is over: it never runs out."""
        if not self._over:
            self._over = True
            self._sweep.forget(self)

    def progressed(self) -> None:
        if not self._over and not self._paused:
            self._move()  # later than before: the shared timer stays where it is

    @contextmanager
    def paused(self) -> Iterator[None]:
        if self._over:
            yield
            return
        self._paused += 1
        self._move()
        try:
            yield
        finally:
            self._paused -= 1
            if not self._paused and not self._over:
                self._move()  # maybe sooner than the hard maximum it waited for: the timer may move


class _Sweep:
    """The one timer the `TimerDeadline`s of an event loop share."""

    _SLACK = 0.001
    """A deadline this close is due (a loop's timer may fire a little early)."""

    _current = threading.local()

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.deadlines: set[TimerDeadline] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._armed_at = math.inf

    @classmethod
    def of(cls, loop: asyncio.AbstractEventLoop) -> _Sweep:
        """The sweep of `loop` (a thread runs one loop at a time: a new loop gets a new sweep)."""
        sweep: _Sweep | None = getattr(cls._current, "sweep", None)
        if sweep is None or sweep.loop is not loop:
            sweep = cls._current.sweep = cls(loop)
        return sweep

    def watch(self, deadline: TimerDeadline) -> None:
        self.deadlines.add(deadline)
        if deadline.at < self._armed_at:
            self._arm(deadline.at)

    def forget(self, deadline: TimerDeadline) -> None:
        self.deadlines.discard(deadline)

    def _arm(self, at: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._armed_at = at
        self._timer = self.loop.call_at(at, self._fire) if at != math.inf else None

    def _fire(self) -> None:
        self._timer, self._armed_at = None, math.inf
        now = self.loop.time() + self._SLACK
        due = [deadline for deadline in self.deadlines if deadline.at <= now]
        self.deadlines.difference_update(due)
        for deadline in due:
            try:
                deadline.expired()
            except Exception:  # boundary: one call's expiry must not keep the others from theirs
                logger.exception("a call's deadline failed to expire cleanly")
        if self.deadlines:
            self._arm(min(deadline.at for deadline in self.deadlines))
