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
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from nexus_gateway.daemon.lock import lock_held


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
        """The folder, created (with its parents) and kept private to the user (0700)."""
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self.folder.stat().st_mode & 0o077:
            os.chmod(self.folder, 0o700)
