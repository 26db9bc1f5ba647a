"""`nexus-gateway daemon`: one gateway for every host of the user.

One `Gateway` (one set of upstream processes, one model for `run`, one catalog and index) served on two
fronts at once:

- a Unix socket, `<state_dir>/daemon/daemon.sock` (server/unix.py), where `nexus-gateway connect` relays
  each host's stdio session (one connection a host, each served as `serve` serves stdio);
- the HTTP front (`/mcp`, `/sse`, `/healthz`, `/metrics`) on 127.0.0.1, with a bearer token kept in
  `<state_dir>/daemon/token` (0600) besides any `nexus.auth_tokens`.

The daemon holds `daemon.lock` for its whole life (lock.py), writes `daemon.json` once both fronts listen,
and removes the socket and `daemon.json` when it stops: on SIGTERM/SIGINT, or `nexus-gateway daemon stop`
(a `nexus-stop` preamble on the socket). Hosts come and go; the daemon and its upstreams stay.
"""

from __future__ import annotations

import logging
import os
import secrets
import time
from datetime import datetime
from typing import Any

import anyio

from nexus_gateway import __version__
from nexus_gateway.config import GatewayConfig
from nexus_gateway.daemon.locate import DaemonFiles, DaemonInfo, folder_problem
from nexus_gateway.errors import DaemonError, DaemonRunning
from nexus_gateway.gateway import Gateway
from nexus_gateway.runtime import _heap, preamble
from nexus_gateway.runtime.statefile import save_json
from nexus_gateway.server.http import serve_http
from nexus_gateway.server.unix import UnixFront

logger = logging.getLogger(__name__)

HOST = "127.0.0.1"


def ensure_token(files: DaemonFiles) -> str:
    """The daemon's bearer token: the one in `token` when it is private to the user, else a new one."""
    try:
        mode = files.token.stat().st_mode
        if mode & 0o077 == 0 and (token := files.read_token()):
            return token
        logger.warning("%s was readable by others; replacing it with a new token", files.token)
    except FileNotFoundError:
        pass
    token = secrets.token_urlsafe(32)
    temporary = files.token.with_name(f".token.{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    os.replace(temporary, files.token)
    return token


def refuse_second(files: DaemonFiles, exc: DaemonRunning) -> DaemonRunning:
    """The error for a daemon that found the lock held, naming the one that runs."""
    info = files.read_info()
    if info is None:
        return exc
    return DaemonRunning(
        f"a daemon already runs for {files.folder} (pid {info.pid}, {info.url}); stop it with "
        "`nexus-gateway daemon stop`"
    )


class Daemon:
    """The running daemon: its gateway, its two fronts, and what `daemon status` reports."""

    def __init__(self, config: GatewayConfig, files: DaemonFiles, *, port: int) -> None:
        self.config = config
        self.files = files
        self.port = port
        self.started = time.time()
        self._stop = anyio.Event()
        self._info: DaemonInfo | None = None
        self._front: UnixFront | None = None
        self._gateway: Gateway | None = None

    async def run(self) -> None:
        """Serve until stopped (the caller holds the lock)."""
        files = self.files
        files.make_folder()
        if (problem := folder_problem(files.folder)) is not None:
            raise DaemonError(f"refusing to serve: {problem}. Set nexus.state_dir to a folder only you can write")
        files.info.unlink(missing_ok=True)  # a killed daemon's; the lock says none runs now
        self.config.nexus.auth_tokens = [*self.config.nexus.auth_tokens, ensure_token(files)]
        try:
            async with Gateway(self.config) as gateway, anyio.create_task_group() as tg:
                self._gateway = gateway
                tg.start_soon(_heap.settle_after, gateway.wait_warm)
                controls = {preamble.STATUS: self._status, preamble.STOP: self._stop_soon}
                self._front = UnixFront(gateway, files.socket, controls=controls)
                await tg.start(self._front.serve)
                host, port = await tg.start(
                    lambda task_status: serve_http(gateway, host=HOST, port=self.port, task_status=task_status)
                )
                self._info = DaemonInfo(
                    pid=os.getpid(),
                    url=f"http://{host}:{port}",
                    socket=str(files.socket),
                    started=datetime.fromtimestamp(self.started).astimezone().isoformat(timespec="seconds"),
                    version=__version__,
                )
                save_json(files.info, self._info.to_json())
                logger.info("nexus-gateway daemon %d ready: %s and %s", os.getpid(), files.socket, self._info.url)
                await self._stop.wait()
                logger.info("nexus-gateway daemon stopping")
                tg.cancel_scope.cancel()
        finally:
            files.info.unlink(missing_ok=True)
            files.socket.unlink(missing_ok=True)

    async def _stop_soon(self, body: dict[str, Any]) -> dict[str, Any]:
        self._stop.set()
        return {"pid": os.getpid()}

    async def _status(self, body: dict[str, Any]) -> dict[str, Any]:
        gateway, front, info = self._gateway, self._front, self._info
        assert gateway is not None and front is not None
        return {
            **(info.to_json() if info is not None else {"pid": os.getpid()}),
            "uptime": round(time.time() - self.started, 1),
            "config": str(self.config.path),
            "mode": gateway.mode,
            "tools": len(gateway.catalog),
            "upstreams": [{**status.__dict__, "state": status.state.value} for status in gateway.pool.statuses()],
            "clients": [client.describe() for client in front.clients.snapshot()],
        }
