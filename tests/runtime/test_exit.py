"""`_exit.exited` notices a child's exit when it happens, not at the next poll."""

from __future__ import annotations

import subprocess
import sys

import anyio
import pytest

from nexus_gateway.runtime._exit import exited
from tests.runtime._loops import anyio_backend  # noqa: F401  (the fixture: asyncio and uvloop)

pytestmark = pytest.mark.anyio


EXIT_SOON = [sys.executable, "-c", "import time; time.sleep(0.3); raise SystemExit(3)"]
NEVER = 3600.0
"""A poll interval no test waits out: an exit noticed within the test's deadline was not polled for."""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pidfds are Linux's; elsewhere exits are polled")
async def test_an_event_loop_child_is_seen_exiting_at_once() -> None:
    async with await anyio.open_process(EXIT_SOON) as process:
        with anyio.fail_after(10):
            assert await exited(process, NEVER) == 3


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pidfds are Linux's; elsewhere exits are polled")
async def test_an_adopted_child_is_seen_exiting_at_once() -> None:
    """A process the gateway adopted from its prelaunch is a `Popen` (`_prelaunch.AdoptedProcess`)."""
    popen = subprocess.Popen(EXIT_SOON)

    class Adopted:
        pid = popen.pid

        @property
        def returncode(self) -> int | None:
            return popen.poll()

    with anyio.fail_after(10):
        assert await exited(Adopted(), NEVER) == 3


async def test_a_child_that_has_exited_already_is_seen_at_once() -> None:
    async with await anyio.open_process([sys.executable, "-c", "pass"]) as process:
        await process.wait()
        with anyio.fail_after(5):
            assert await exited(process, NEVER) == 0


async def test_without_pidfds_the_exit_is_polled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr("os.pidfd_open", raising=False)
    async with await anyio.open_process(EXIT_SOON) as process:
        with anyio.fail_after(10):
            assert await exited(process, 0.05) == 3


async def test_waiting_is_cancelled_with_its_scope() -> None:
    async with await anyio.open_process([sys.executable, "-c", "import time; time.sleep(60)"]) as process:
        with anyio.move_on_after(0.3) as scope:
            await exited(process, NEVER)
        assert scope.cancelled_caught and process.returncode is None
        process.kill()
