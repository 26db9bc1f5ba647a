"""Where the daemon of a state folder keeps its files, and reading them (a contract other tools rely on).

    <state_dir>/daemon/            0700
        daemon.sock                0600  the Unix socket: `nexus-gateway connect` attaches here
        token                      0600  the bearer token of the daemon's HTTP front
        daemon.json                      {"pid", "url": "http://127.0.0.1:PORT", "socket", "started", "version"}
        daemon.lock                      held (flock) by the running daemon: at most one per state folder
        daemon.log                 0600  the daemon's stderr when a shim started it

`daemon.json` and the socket exist while a daemon runs (it removes them when it stops); whether one runs
is the lock's to say (`DaemonFiles.running`), since a killed daemon leaves its files behind.
"""

from __future__ import annotations

import json
import os
import stat
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from nexus_gateway.daemon.lock import lock_held


def _problem(path: Path, st: os.stat_result) -> str | None:
    me = os.getuid()
    if st.st_uid != me:
        return f"{path} is owned by uid {st.st_uid}, not by you (uid {me}): another user may have made it"
    if st.st_mode & 0o022:
        who = " and ".join(w for w, bit in (("its group", 0o020), ("others", 0o002)) if st.st_mode & bit)
        return f"{path} is writable by {who} (mode {stat.S_IMODE(st.st_mode):04o}); it must be private to you"
    return None


def folder_problem(folder: Path) -> str | None:
    """Why `folder` cannot be trusted to hold the daemon's socket, or None (also None when it is absent)."""
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return f"{folder} is a symbolic link; the daemon's folder must be a real directory"
    if not stat.S_ISDIR(st.st_mode):
        return f"{folder} is not a directory"
    return _problem(folder, st)


def socket_problem(path: Path) -> str | None:
    """Why the socket at `path` cannot be trusted, or None (also None when it is absent)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISSOCK(st.st_mode):
        return f"{path} is not a socket"
    return _problem(path, st)


@dataclass(frozen=True)
class DaemonInfo:
    """What `daemon.json` says about the running daemon."""

    pid: int
    url: str
    socket: str
    started: str
    """ISO 8601, with the UTC offset."""
    version: str

    def uptime(self) -> float:
        """Seconds since the daemon started."""
        return time.time() - datetime.fromisoformat(self.started).timestamp()

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class DaemonFiles:
    """The daemon's files under one state folder."""

    folder: Path

    @classmethod
    def of(cls, state_dir: Path) -> DaemonFiles:
        return cls(Path(state_dir).expanduser() / "daemon")

    @property
    def socket(self) -> Path:
        return self.folder / "daemon.sock"

    @property
    def token(self) -> Path:
        return self.folder / "token"

    @property
    def info(self) -> Path:
        return self.folder / "daemon.json"

    @property
    def lock(self) -> Path:
        return self.folder / "daemon.lock"

    @property
    def log(self) -> Path:
        return self.folder / "daemon.log"

    def read_info(self) -> DaemonInfo | None:
        """`daemon.json`, or None when it is missing or unreadable (it may be stale: see `running`)."""
        try:
            data = json.loads(self.info.read_text(encoding="utf-8"))
            return DaemonInfo(**{key: data[key] for key in ("pid", "url", "socket", "started", "version")})
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def read_token(self) -> str | None:
        try:
            return self.token.read_text(encoding="utf-8").strip() or None
        except OSError:
            return None

    def running(self) -> bool:
        """Whether a daemon holds this folder's lock now."""
        return lock_held(self.lock)

    def make_folder(self) -> None:
        """The folder, created (with its parents) and kept private to the user (0700). One that is not the
        user's own directory is left as it is (`folder_problem` says why it cannot be used)."""
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = os.lstat(self.folder)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and st.st_mode & 0o077:
            os.chmod(self.folder, 0o700)
