"""Run an upstream so that it, and everything it starts, dies with the gateway (Linux).

    python -I -S _launch.py GATEWAY_PID COMMAND [ARG...]

The gateway starts this in a new session, so this process leads the upstream's process group. It
asks the kernel for SIGHUP when the gateway dies (`PR_SET_PDEATHSIG`), then compares `getppid()`
with GATEWAY_PID: a gateway that died before the request was made is caught there. It forks the
command (the command inherits stdin, stdout and stderr; this process lets go of stdin and stdout)
and waits. When the command exits, this process exits with its status. When the gateway dies, it
sends SIGTERM to the whole group, gives the command `GRACE` seconds, then SIGKILLs the group,
itself included: a kill -9 of the gateway leaves no upstream and no grandchild behind.

The gateway signals the whole group, so SIGTERM and SIGINT change nothing here (the command gets
them directly): this process stays until its command is gone. Standard library only, run with `-I
-S`: it starts in about 20 ms and holds a few MB.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
GRACE = 1.0
_NOTICE = signal.SIGHUP


class _GatewayDied(Exception):
    pass


def _on_gateway_death(signum: int, frame: object) -> None:
    raise _GatewayDied


def _ignore(signum: int, frame: object) -> None:
    """Signals to the group reach the command directly; this process waits for the command."""


def _die_with_parent(libc: ctypes.CDLL, signum: int) -> None:
    if libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")


def _end_group(child: int) -> None:
    os.killpg(0, signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline:
        if os.waitpid(child, os.WNOHANG)[0]:
            break
        time.sleep(0.02)
    os.killpg(0, signal.SIGKILL)


def _spawn(command: list[str], libc: ctypes.CDLL) -> int:
    launcher = os.getpid()
    child = os.fork()
    if child:
        return child
    try:
        # Python ignores SIGPIPE and SIGXFSZ; a program must start with the default handlers.
        for signum in (signal.SIGPIPE, signal.SIGXFSZ, _NOTICE, signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, signal.SIG_DFL)
        _die_with_parent(libc, signal.SIGKILL)  # should this launcher itself be killed
        if os.getppid() == launcher:
            os.execvp(command[0], command)
    except OSError as exc:
        os.write(2, f"nexus-gateway: cannot run {command[0]!r}: {exc}\n".encode())
    finally:
        os._exit(127)


def main(argv: list[str]) -> int:
    gateway, command = int(argv[1]), argv[2:]
    libc = ctypes.CDLL(None, use_errno=True)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _ignore)
    signal.signal(_NOTICE, _on_gateway_death)
    child: int | None = None
    try:
        _die_with_parent(libc, _NOTICE)
        if os.getppid() != gateway:
            raise _GatewayDied  # it died before it could be watched
        child = _spawn(command, libc)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        _, status = os.waitpid(child, 0)
    except _GatewayDied:
        signal.signal(_NOTICE, signal.SIG_IGN)
        if child is not None:
            _end_group(child)
        return 1
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
