"""TimerDeadline (_deadline.py): CallDeadline's rules kept by an event-loop timer, for calls no task waits on."""

from __future__ import annotations

import time

import anyio
import pytest

from nexus_gateway._deadline import TimerDeadline

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


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
