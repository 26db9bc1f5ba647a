"""Upstreams started while the gateway is still importing: a cold start in the time of the slowest upstream,
not in the sum of the gateway's imports and the upstream's start.

`serve` calls `prelaunch(...)` as soon as it has read the config, before it imports the gateway (the SDK
and the pydantic models of two protocol eras: most of a second). Each stdio upstream imports its own SDK
meanwhile. When the pool opens an upstream, `stdio_client` takes its waiting process (`adopt`) when the
command, arguments, environment and folder are exactly the ones it would start, so a changed entry never
gets a stale process. A waiting process nobody adopted is ended by `discard`, which `serve` calls once
every upstream has had its first start (and on exit); on Linux it also dies with the gateway (`_launch.py`).
Only as many servers as there are start slots are started early, so `max_concurrent_starts` keeps its
meaning.

The pipes of an adopted process are non-blocking file descriptors driven by the event loop
(`anyio.wait_readable`/`wait_writable`): the same readiness-based I/O an `anyio.open_process` pipe does.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass
from typing import IO, TextIO

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from nexus_gateway._process_group import launch_argv
from nexus_gateway.config import GatewayConfig, NexusSettings, StdioServer, default_state_dir
from nexus_gateway.environment import upstream_environment
from nexus_gateway.switches import ServerSwitches

logger = logging.getLogger(__name__)

_READ = 1 << 16


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


def first_launches(config: GatewayConfig) -> list[Launch]:
    """The stdio servers the gateway will start first: enabled, not switched off at run time
    (`Gateway.wanted_servers`), as many as there are start slots."""
    disabled = ServerSwitches(default_state_dir(config) / "servers.json").disabled
    return [
        Launch.of_server(spec, config.nexus)
        for name, spec in config.enabled_servers.items()
        if isinstance(spec, StdioServer) and name not in disabled
    ][: config.nexus.max_concurrent_starts]


_waiting: dict[Launch, list[subprocess.Popen[bytes]]] = {}
"""The processes started early, by command (two servers may run the same one)."""


def prelaunch(launches: Iterable[Launch], errlog: TextIO) -> int:
    """Start each command now, to be adopted later; how many started. A command that cannot start is
    left to the pool, which reports it the usual way."""
    started = 0
    for launch in launches:
        env = dict(launch.env)
        try:
            argv = launch_argv(launch.command, list(launch.args), env, launch.cwd)
            popen = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errlog,
                env=env,
                cwd=launch.cwd,
                start_new_session=True,
            )
        except OSError as exc:
            logger.debug("not starting %s early: %s", launch.command, exc)
            continue
        _waiting.setdefault(launch, []).append(popen)
        started += 1
    return started


def adopt(command: str, args: list[str], env: dict[str, str], cwd: str | None) -> Process | None:
    """The waiting process started for exactly this command, or None."""
    key = Launch.of(command, args, env, cwd)
    waiting = _waiting.get(key)
    if not waiting:
        return None
    popen = waiting.pop(0)
    if not waiting:
        del _waiting[key]
    logger.debug("took the process started early for %s (pid %d)", command, popen.pid)
    return AdoptedProcess(popen)


def discard() -> int:
    """End every waiting process nobody adopted; how many there were."""
    unused = [popen for waiting in _waiting.values() for popen in waiting]
    _waiting.clear()
    if unused:
        logger.info("ending %d upstream process(es) started early that the gateway did not use", len(unused))
    for popen in unused:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(popen.pid, signal.SIGKILL)
        for pipe in (popen.stdin, popen.stdout):
            if pipe is not None:
                pipe.close()
        with suppress(subprocess.TimeoutExpired):
            popen.wait(timeout=1.0)
    return len(unused)


class AdoptedProcess(Process):
    """A `subprocess.Popen` behind anyio's `Process` interface, its pipes on the event loop."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        assert popen.stdin is not None and popen.stdout is not None
        self._popen = popen
        self._stdin = _PipeSend(popen.stdin)
        self._stdout = _PipeReceive(popen.stdout)

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


class _PipeReceive(ByteReceiveStream):
    def __init__(self, pipe: IO[bytes]) -> None:
        self._pipe = pipe
        self._fd = pipe.fileno()
        os.set_blocking(self._fd, False)

    async def receive(self, max_bytes: int = _READ) -> bytes:
        while True:
            if self._pipe.closed:
                raise anyio.ClosedResourceError
            try:
                data = os.read(self._fd, max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self._fd)
                continue
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            if not data:
                raise anyio.EndOfStream
            return data

    async def aclose(self) -> None:
        if not self._pipe.closed:
            anyio.notify_closing(self._fd)
            self._pipe.close()


class _PipeSend(ByteSendStream):
    def __init__(self, pipe: IO[bytes]) -> None:
        self._pipe = pipe
        self._fd = pipe.fileno()
        os.set_blocking(self._fd, False)
        self._lock = anyio.Lock(fast_acquire=True)  # a line goes out whole even when the pipe is full

    async def send(self, item: bytes) -> None:
        async with self._lock:
            await self._send(item)

    async def _send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            if self._pipe.closed:
                raise anyio.ClosedResourceError
            try:
                written = os.write(self._fd, view)
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
                continue
            except OSError as exc:  # BrokenPipeError: the upstream closed its stdin
                raise anyio.BrokenResourceError from exc
            view = view[written:]

    async def aclose(self) -> None:
        if not self._pipe.closed:
            anyio.notify_closing(self._fd)
            self._pipe.close()
