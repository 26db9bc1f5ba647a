"""The gateway over a Unix socket: each connection is a stdio session of its own (the daemon's front).

`nexus-gateway connect` (daemon/shim.py) relays a host's stdin and stdout to one connection. The daemon
reads one preamble line (preamble.py) naming the client's profile, answers it, and from then on serves
the connection's byte stream exactly as `serve` serves stdin and stdout: the same line framing
(`_pipes.line_streams`) and the same `Server.run`, so both protocol eras, notifications, progress,
cancellation and requests to the host (sampling, elicitation, roots) work alike. Everything a connection
runs serves its `ClientIdentity` (clients.py).

A preamble other than `nexus-connect` is handed to the `controls` the daemon gave (status, stop): one
answer line, then the connection closes. The socket is made readable by its owner only (0600); the
folder around it should be 0700 too (the daemon sees to that).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import struct
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskStatus

from nexus_gateway.clients import ClientIdentity, ConnectedClients
from nexus_gateway.config.profiles import Profile
from nexus_gateway.errors import NexusError
from nexus_gateway.gateway import Gateway
from nexus_gateway.runtime import preamble
from nexus_gateway.server._pipes import LINE_LIMIT, line_streams
from nexus_gateway.server.app import build_server, initialization_options

logger = logging.getLogger(__name__)

PREAMBLE_TIMEOUT = 10.0
"""Seconds a new connection gets to send its preamble line."""
_SUN_PATH_MAX = 107

Control = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
"""Answers one control preamble (its body) with the body of the answer line."""


def listen_backlog() -> int:
    """The longest listen queue the system allows (`net.core.somaxconn` on Linux), so a burst of hosts
    connecting at once waits in the queue instead of being refused."""
    try:
        with open("/proc/sys/net/core/somaxconn", encoding="ascii") as handle:
            return max(int(handle.read().strip()), socket.SOMAXCONN)
    except (OSError, ValueError):
        return socket.SOMAXCONN


def listen_unix(path: Path) -> socket.socket:
    """A listening, non-blocking socket at `path` (a stale file there is replaced), mode 0600."""
    if len(os.fsencode(path)) > _SUN_PATH_MAX:
        raise NexusError(
            f"the socket path {path} is longer than {_SUN_PATH_MAX} bytes; set nexus.state_dir to a shorter folder"
        )
    path.unlink(missing_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
        os.chmod(path, 0o600)
        sock.listen(listen_backlog())
    except OSError as exc:
        sock.close()
        raise NexusError(f"cannot listen on {path}: {exc.strerror}") from None
    sock.setblocking(False)
    return sock


def _peer_pid(conn: socket.socket) -> int | None:
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    try:
        pid, _, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    except OSError:
        return None
    return int(pid) or None


class UnixFront:
    """Serves `gateway` on a Unix socket; `clients` are the connections being served now."""

    def __init__(self, gateway: Gateway, path: Path, *, controls: Mapping[str, Control] | None = None) -> None:
        self.gateway = gateway
        self.path = path
        self.controls = dict(controls or {})
        self.clients = ConnectedClients()
        self._server = build_server(gateway)

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Listen, then accept and serve connections until cancelled; the socket file is removed after."""
        listener = listen_unix(self.path)
        logger.info("nexus-gateway listening on %s", self.path)
        try:
            async with anyio.create_task_group() as tg:
                task_status.started()
                while True:
                    await anyio.wait_readable(listener)
                    try:
                        conn, _ = listener.accept()
                    except (BlockingIOError, InterruptedError):
                        continue
                    except OSError as exc:  # out of file descriptors, say: the next one may succeed
                        logger.warning("could not accept a socket client: %s", exc)
                        await anyio.sleep(0.1)
                        continue
                    tg.start_soon(self._serve_connection, conn)
        finally:
            listener.close()
            self.path.unlink(missing_ok=True)

    async def _serve_connection(self, conn: socket.socket) -> None:
        pid = _peer_pid(conn)
        try:
            reader, writer = await asyncio.open_unix_connection(sock=conn, limit=LINE_LIMIT)
        except OSError as exc:
            conn.close()
            logger.warning("could not serve a socket client (pid %s): %s", pid, exc)
            return
        try:
            await self._serve(reader, writer, pid)
        except Exception as exc:  # boundary: one client's failure never stops the others being served
            logger.warning("a socket client (pid %s) failed: %s", pid, exc)
        finally:
            writer.close()
            with anyio.CancelScope(shield=True), anyio.move_on_after(1), contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, pid: int | None) -> None:
        with anyio.move_on_after(PREAMBLE_TIMEOUT):
            first = await reader.readline()
        try:
            kind, body = preamble.parse(first) if first else ("", {})
        except preamble.PreambleError as exc:
            message = f"send the {preamble.CONNECT!r} preamble line first (nexus-gateway connect does): {exc}"
            await _answer(writer, preamble.REFUSED, {"message": message})
            return
        if kind in self.controls:
            await _answer(writer, kind, await self.controls[kind](body))
            return
        if kind != preamble.CONNECT:
            if first:
                await _answer(writer, preamble.REFUSED, {"message": f"unknown preamble {kind!r}"})
            return
        if body.get("version") != preamble.VERSION:
            message = f"this daemon speaks preamble version {preamble.VERSION}, not {body.get('version')!r}"
            await _answer(writer, preamble.REFUSED, {"message": message})
            return
        profile = body.get("profile") if isinstance(body.get("profile"), str) else None
        try:
            Profile.of(self.gateway.settings, profile)
        except NexusError as exc:
            await _answer(writer, preamble.REFUSED, {"message": str(exc)})
            return
        identity = ClientIdentity(profile=profile, transport="socket", pid=pid)
        await _answer(writer, preamble.CONNECTED, {"client": identity.number})
        logger.info("client %d connected (pid %s, profile %s)", identity.number, pid, identity.profile)
        try:
            with self.clients.connected(identity):
                async with line_streams(reader, writer) as (read_stream, write_stream):
                    await self._server.run(read_stream, write_stream, initialization_options(self._server))
        finally:
            logger.info("client %d disconnected", identity.number)


async def _answer(writer: asyncio.StreamWriter, kind: str, body: dict[str, Any]) -> None:
    writer.write(preamble.line(kind, body))
    await writer.drain()
