"""Reaching the daemon's socket only when the daemon is the user's own, and waiting through a busy moment.

With `state_dir` in a folder others can write, another user could create `daemon/` and a socket there first;
a shim that connected would hand that user the host's whole MCP session. So, before a byte is sent:

1. the folder `<state_dir>/daemon` must be a real directory (not a symbolic link), owned by this user and
   writable by nobody else (`folder_problem`);
2. so must the socket (`socket_problem`);
3. once connected, the process listening must run as this user (`SO_PEERCRED`, Linux; on systems without
   it, 1 and 2 stand alone).

Each refusal is a `DaemonError` that names the path and what is wrong. A connect that meets a full listen
queue (`EAGAIN`) or an interrupted call is retried by the caller: `connect` answers None for "not now".
"""

from __future__ import annotations

import errno
import os
import socket
import struct

from nexus_gateway.daemon.locate import DaemonFiles, folder_problem, socket_problem
from nexus_gateway.errors import DaemonError

TRANSIENT = frozenset({errno.ENOENT, errno.ECONNREFUSED, errno.EAGAIN, errno.EINTR, errno.ETIMEDOUT})
"""Connect errors that mean "not yet": no socket, no listener yet, a full queue, an interrupted call."""


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of a connected Unix socket (None where the OS cannot say)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    return int(uid)


def refuse(problem: str) -> DaemonError:
    return DaemonError(
        f"refusing to connect to the daemon: {problem}. Remove it, or set nexus.state_dir to a folder only you "
        "can write"
    )


def check_folder(files: DaemonFiles) -> None:
    """Raise `DaemonError` when the daemon's folder is not private to this user."""
    if (problem := folder_problem(files.folder)) is not None:
        raise refuse(problem)


def connect(files: DaemonFiles) -> socket.socket | None:
    """A connected, non-blocking socket to the user's own daemon; None when there is none yet or its queue is
    full (try again); `DaemonError` when what listens there is not the user's."""
    check_folder(files)
    if (problem := socket_problem(files.socket)) is not None:
        raise refuse(problem)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setblocking(False)  # a Unix connect never waits: a full listen queue answers EAGAIN at once
    try:
        sock.connect(str(files.socket))
    except OSError as exc:
        sock.close()
        if exc.errno in TRANSIENT:
            return None
        raise DaemonError(f"cannot connect to the daemon at {files.socket}: {exc.strerror}") from None
    uid = peer_uid(sock)
    if uid is not None and uid != os.getuid():
        sock.close()
        raise refuse(f"the process listening on {files.socket} runs as uid {uid}, not as you (uid {os.getuid()})")
    return sock
