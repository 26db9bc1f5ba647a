"""Upstreams started while the gateway is still importing: a cold start in the time of the slowest upstream,
not in the sum of the gateway's imports and the upstream's start.

`serve` calls `prelaunch(...)` as soon as it has read the config, before it imports the gateway (the SDK
and the pydantic models of two protocol eras: most of a second). Each stdio upstream imports its own SDK
meanwhile. When the pool opens an upstream, `stdio_client` takes its waiting process (`adopt`) when the
command, arguments, environment and folder are exactly the ones it would start, so a changed entry never
gets a stale process. A waiting process nobody adopted is ended by `discard`, which `serve` calls once
every upstream has had its first start (and on exit); on Linux it also dies with the gateway (`_launch.py`).
At most `PRELAUNCH_MAX` servers are started early (and no more than there are start slots), the slowest
first: more would slow the gateway's own import, and with it the handshake the host is waiting for (44 at
once on 2 cores: the gateway listened after 27 s instead of 9 s). The pool starts the rest as soon as it runs.

An upstream started early gets a Unix socket pair for its stdin and another for its stdout, as libuv
gives a process uvloop starts (the gateway's loop), and the gateway's ends become asyncio streams: the
hot path does the same work for an adopted process as for one the pool started.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass
from typing import TextIO

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from nexus_gateway.config import GatewayConfig, NexusSettings, StdioServer, default_state_dir
from nexus_gateway.config.switches import ServerSwitches
from nexus_gateway.upstreams._process_group import launch_argv
from nexus_gateway.upstreams.environment import upstream_environment
from nexus_gateway.upstreams.start_order import load_start_times, slowest_first

logger = logging.getLogger(__name__)

_READ = 1 << 16
_BUFFER = 1 << 20
"""What stdout's reader holds before it stops reading from the pipe (asyncio pauses at twice this)."""


@dataclass(frozen=True)
class Launch:
    """One upstream command, exactly as the pool would start it."""

    command: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    cwd: str | None

    @classmethod
    def of(cls, command: str, args: Iterable[str], env: dict[str, str], cwd: str | None) -> Launch:
        return cls(command, tuple(args), tuple(sorted(env.items())), cwd)

    @classmethod
    def of_server(cls, spec: StdioServer, settings: NexusSettings) -> Launch:
        """How the pool starts this server: its command, arguments, folder, and the environment it gets."""
        return cls.of(spec.command, spec.args, upstream_environment(spec.env, inherit=settings.inherit_env), spec.cwd)


PRELAUNCH_MAX = 8
"""Upstreams started before the gateway imports (`first_launches`)."""


def first_launches(config: GatewayConfig) -> list[Launch]:
    """The stdio servers the gateway will start first: enabled, not switched off at run time
    (`Gateway.wanted_servers`), the slowest first (`start_order.py`), at most `PRELAUNCH_MAX` and no more
    than there are start slots."""
    state = default_state_dir(config)
    disabled = ServerSwitches(state / "servers.json").disabled
    servers = config.enabled_servers
    order = slowest_first(servers, load_start_times(state))
    chosen = [name for name in order if isinstance(servers[name], StdioServer) and name not in disabled]
    return [
        Launch.of_server(spec, config.nexus)
        for name in chosen[: min(PRELAUNCH_MAX, config.nexus.max_concurrent_starts)]
        if isinstance(spec := servers[name], StdioServer)
    ]


@dataclass(frozen=True)
class _Started:
    popen: subprocess.Popen[bytes]
    stdin: socket.socket
    stdout: socket.socket
    """The gateway's ends of the process's stdin and stdout."""

    def close(self) -> None:
        self.stdin.close()
        self.stdout.close()

    def end(self) -> None:
        """Kill the process's whole group (it leads one) and let go of its sockets."""
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        self.close()


_waiting: dict[Launch, list[_Started]] = {}
"""The processes started early, by command (two servers may run the same one)."""


def prelaunch(launches: Iterable[Launch], errlog: TextIO) -> int:
    """Start each command now, to be adopted later; how many started. A command that cannot start is
    left to the pool, which reports it the usual way. Not on Windows, where the pool starts every upstream
    through the SDK's transport (Job Objects, PATHEXT)."""
    if sys.platform == "win32":  # pragma: no cover
        return 0
    started = 0
    for launch in launches:
        env = dict(launch.env)
        stdin, their_stdin = socket.socketpair()
        stdout, their_stdout = socket.socketpair()
        try:
            argv = launch_argv(launch.command, list(launch.args), env, launch.cwd)
            popen = subprocess.Popen(
                argv,
                stdin=their_stdin.fileno(),
                stdout=their_stdout.fileno(),
                stderr=errlog,
                env=env,
                cwd=launch.cwd,
                start_new_session=True,
            )
        except OSError as exc:
            logger.debug("not starting %s early: %s", launch.command, exc)
            stdin.close()
            stdout.close()
            continue
        finally:
            their_stdin.close()
            their_stdout.close()
        _waiting.setdefault(launch, []).append(_Started(popen, stdin, stdout))
        started += 1
    return started


async def adopt(command: str, args: list[str], env: dict[str, str], cwd: str | None) -> Process | None:
    """The waiting process started for exactly this command, or None."""
    key = Launch.of(command, args, env, cwd)
    waiting = _waiting.get(key)
    if not waiting:
        return None
    started = waiting.pop(0)
    if not waiting:
        del _waiting[key]
    logger.debug("took the process started early for %s (pid %d)", command, started.popen.pid)
    return await AdoptedProcess.attach(started)


def discard() -> int:
    """End every waiting process nobody adopted; how many there were."""
    unused = [started for waiting in _waiting.values() for started in waiting]
    _waiting.clear()
    if unused:
        logger.info("ending %d upstream process(es) started early that the gateway did not use", len(unused))
    for started in unused:
        started.end()
        with suppress(subprocess.TimeoutExpired):
            started.popen.wait(timeout=1.0)
    return len(unused)


class AdoptedProcess(Process):
    """A `subprocess.Popen` behind anyio's `Process` interface, its stdin and stdout asyncio streams over
    Unix sockets. `stream_writer` is stdin's `asyncio.StreamWriter` and `stream_reader` stdout's
    `asyncio.StreamReader`, for the upstream's line writer and early answers (`stdio_client`), as for a
    process anyio started."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        reader: asyncio.StreamReader,
        source: asyncio.StreamWriter,
        writer: asyncio.StreamWriter,
    ) -> None:
        self._popen = popen
        self.stream_writer = writer
        self.stream_reader = reader
        self._stdin = _WriterStream(writer)
        self._stdout = _ReaderStream(reader, source)

    @classmethod
    async def attach(cls, started: _Started) -> AdoptedProcess:
        try:
            reader, source = await asyncio.open_unix_connection(sock=started.stdout, limit=_BUFFER)
            _, writer = await asyncio.open_unix_connection(sock=started.stdin)
        except BaseException:
            # Cancelled (the gateway is stopping) before `stdio_client` owns it: end the group here, or an
            # upstream that exits when its stdin closes would leave what it started behind.
            started.end()
            raise
        return cls(started.popen, reader, source, writer)

    async def aclose(self) -> None:
        await self._stdin.aclose()
        await self._stdout.aclose()
        await self.wait()

    async def wait(self) -> int:
        while (code := self._popen.poll()) is None:  # noqa: ASYNC110 - no event for a child's exit here
            await anyio.sleep(0.02)
        return code

    def terminate(self) -> None:
        self._popen.terminate()

    def kill(self) -> None:
        self._popen.kill()

    def send_signal(self, signal: int) -> None:
        self._popen.send_signal(signal)

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        return self._popen.poll()

    @property
    def stdin(self) -> ByteSendStream:
        return self._stdin

    @property
    def stdout(self) -> ByteReceiveStream:
        return self._stdout

    @property
    def stderr(self) -> None:
        return None


class _ReaderStream(ByteReceiveStream):
    def __init__(self, reader: asyncio.StreamReader, connection: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._connection = connection
        self._closed = False

    async def receive(self, max_bytes: int = _READ) -> bytes:
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            data = await self._reader.read(max_bytes)
        except OSError as exc:
            raise anyio.BrokenResourceError from exc
        if not data:
            raise anyio.ClosedResourceError if self._closed else anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._connection.close()  # a pending read ends with EOF


class _WriterStream(ByteSendStream):
    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def send(self, item: bytes) -> None:
        if self._writer.is_closing():
            raise anyio.BrokenResourceError
        try:
            self._writer.write(item)  # the whole line into the transport's buffer: lines never interleave
            await self._writer.drain()
        except (ConnectionError, RuntimeError) as exc:  # uvloop raises RuntimeError for a closed transport
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        if not self._writer.is_closing():
            self._writer.close()
