"""An upstream process in its own process group, and the end of that whole group.

`spawn` starts the command as the leader of a new session (so of a new process group, which its
children join unless they leave on purpose). On Linux the command runs under `_launch.py`, which
makes it, and the group, die with the gateway even when the gateway is SIGKILLed. `end_group`
closes stdin, waits a short grace for the leader to leave, then SIGTERMs what is left of the group
and SIGKILLs it after another grace: an upstream that leaves a grandchild behind, ignores its stdin
or ignores SIGTERM is gone all the same.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import TextIO

import anyio
from anyio.abc import Process

logger = logging.getLogger(__name__)

STDIN_GRACE = 2.0
"""Seconds an upstream gets to exit on its own once its stdin is closed (the MCP shutdown sequence)."""
TERM_GRACE = 2.0
"""Seconds the group gets between SIGTERM and SIGKILL."""
_POLL = 0.02
_LAUNCHER = Path(__file__).with_name("_launch.py")
USES_LAUNCHER = sys.platform.startswith("linux")


def _resolve(command: str, env: dict[str, str], cwd: str | None) -> str:
    """The executable's path, or FileNotFoundError naming the command (as a direct spawn would)."""
    if os.sep in command:
        path = command if os.path.isabs(command) or cwd is None else os.path.join(cwd, command)
        found = path if os.access(path, os.X_OK) and os.path.isfile(path) else None
    else:
        found = shutil.which(command, path=env.get("PATH", os.defpath))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
    return command if os.sep in command else found


def launch_argv(command: str, args: list[str], env: dict[str, str], cwd: str | None) -> list[str]:
    """What to execute for `command args`: under `_launch.py` on Linux (FileNotFoundError naming the
    command when it cannot be found), as it is elsewhere."""
    if not USES_LAUNCHER:
        return [command, *args]
    return [sys.executable, "-I", "-S", str(_LAUNCHER), str(os.getpid()), _resolve(command, env, cwd), *args]


async def spawn(command: str, args: list[str], env: dict[str, str], cwd: str | None, errlog: TextIO) -> Process:
    return await anyio.open_process(
        launch_argv(command, args, env, cwd),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errlog,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )


async def end_group(process: Process) -> None:
    """Close stdin, then end every process of the group; every wait is bounded. Call shielded."""
    assert process.stdin is not None
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    pgid = process.pid  # the leader's pid is the group id (start_new_session)
    await _wait(lambda: process.returncode is not None, STDIN_GRACE)
    if not _signal_group(pgid, 0):
        return
    _signal_group(pgid, signal.SIGTERM)
    if await _wait(lambda: not _signal_group(pgid, 0), TERM_GRACE):
        return
    logger.warning("upstream process group %d ignored SIGTERM for %gs; killing it", pgid, TERM_GRACE)
    _signal_group(pgid, signal.SIGKILL)
    await _wait(lambda: process.returncode is not None, 1.0)


def _signal_group(pgid: int, signum: int) -> bool:
    """Signal the group; whether it (still) exists. Signal 0 only probes."""
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # a member we may not signal (or an unreaped zombie): not proof the group is gone
    return True


async def _wait(done: Callable[[], bool], timeout: float) -> bool:
    # Polled: no event tells a group is empty, and asyncio's process.wait() also waits for pipe EOF.
    with anyio.move_on_after(timeout):
        while not done():  # noqa: ASYNC110
            await anyio.sleep(_POLL)
        return True
    return False
