"""TimerDeadline (_deadline.py): CallDeadline's rules kept by an event-loop timer (one a loop's deadlines share), for
calls no task waits on."""

from __future__ import annotations

import time

import anyio
import pytest

from nexus_gateway.runtime._deadline import TimerDeadline
from tests.runtime._loops import anyio_backend  # noqa: F401  (the fixture: asyncio and uvloop)

pytestmark = pytest.mark.anyio


async def until_fired(fired: list[bool]) -> float:
    """Seconds until the deadline fired (bounded)."""
    started = time.monotonic()
    with anyio.fail_after(10):
        while not fired:
            await anyio.sleep(0.01)
    return time.monotonic() - started


async def test_a_deadline_nobody_pushes_back_expires_idle():
    fired: list[bool] = []
    TimerDeadline(0.05, 10, fired.append)
    await until_fired(fired)
    assert fired == [False]


async def test_progress_pushes_the_idle_timeout_back_up_to_the_hard_maximum():
    fired: list[bool] = []
    deadline = TimerDeadline(0.2, 0.6, fired.append)
    started = time.monotonic()
    with anyio.fail_after(10):
        while not fired:
            deadline.progressed()
            await anyio.sleep(0.05)
    assert fired == [True]
    assert time.monotonic() - started >= 0.55


async def test_a_paused_deadline_expires_only_at_its_hard_maximum():
    fired: list[bool] = []
    deadline = TimerDeadline(0.05, 0.4, fired.append)
    with deadline.paused():
        assert await until_fired(fired) >= 0.3
    assert fired == [True]


async def test_after_a_pause_the_idle_timeout_runs_again_even_without_a_hard_maximum():
    fired: list[bool] = []
    deadline = TimerDeadline(0.1, None, fired.append)
    with deadline.paused():
        await anyio.sleep(0.3)  # three idle timeouts: none counts while paused
        assert fired == []
    await until_fired(fired)
    assert fired == [False]


async def test_a_cancelled_deadline_never_fires_and_ignores_progress():
    fired: list[bool] = []
    deadline = TimerDeadline(0.05, None, fired.append)
    deadline.cancel()
    deadline.progressed()
    with deadline.paused():
        pass
    await anyio.sleep(0.3)
    assert fired == []


async def test_deadlines_share_one_timer_and_each_expires_at_its_own_time():
    fired: list[str] = []
    started = time.monotonic()
    long = TimerDeadline(1.0, None, lambda hard: fired.append("long"))
    short = TimerDeadline(0.05, None, lambda hard: fired.append("short"))  # sooner than the timer armed for `long`
    done = TimerDeadline(0.05, None, lambda hard: fired.append("done"))
    done.cancel()
    await anyio.sleep(0.3)
    assert fired == ["short"]
    long.progressed()  # pushed back: the shared timer finds it not due at 1.0 s and waits again
    with anyio.fail_after(10):
        while len(fired) < 2:
            await anyio.sleep(0.01)
    assert fired == ["short", "long"]
    assert time.monotonic() - started >= 1.25
    short.cancel()  # over already: nothing happens


async def test_a_pause_ending_brings_the_timer_forward():
    fired: list[bool] = []
    deadline = TimerDeadline(0.1, None, fired.append)
    with deadline.paused():  # no hard maximum: nothing is due while paused
        await anyio.sleep(0.15)
    assert await until_fired(fired) < 0.3  # one idle timeout after the pause, not never
    assert fired == [False]


async def test_one_failing_expiry_does_not_keep_the_others_from_theirs():
    fired: list[bool] = []

    def fail(hard: bool) -> None:
        raise RuntimeError("boom")

    TimerDeadline(0.05, None, fail)
    TimerDeadline(0.05, None, fired.append)
    await until_fired(fired)
    assert fired == [False]
    TimerDeadline(0.05, None, fired.append)  # the timer still serves new deadlines
    with anyio.fail_after(10):
        while len(fired) < 2:
            await anyio.sleep(0.01)
