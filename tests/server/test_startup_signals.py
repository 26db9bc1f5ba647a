"""SIGINT and SIGTERM at any moment of start-up end `serve` promptly, and no upstream process outlives it.

The gateway is launched as a background job is (SIGINT ignored, as shells and some test runners leave it):
the launch in which a SIGINT sent early was lost. Each signal is sent at a moment the test can see, so the
run is the same every time: the process has taken the signals (its first line, `_startup_signals.catch`),
the first upstream process exists (started early, while the gateway imports), the pool adopts it (the event
loop runs, nothing listens for signals yet), an upstream has connected, the heap has settled, and the host
has its answer to initialize but has not listed tools yet. Every upstream carries a tag in its environment,
so whatever the gateway started is found, whoever its parent.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from tests.conftest import faulty, write_config

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc and relies on PR_SET_PDEATHSIG")

EXIT_WITHIN = 10.0
"""Seconds `serve` may take to exit after the signal (a busy machine: it takes well under one when quiet)."""
SEE_WITHIN = 60.0
"""Seconds for a moment of start-up to come (imports and upstream starts on a busy machine)."""
TAG = "NEXUS_SIGNAL_TEST"
MOMENTS = ["signals taken", "first upstream", "adopted", "connected", "heap settled", "initialized"]


def _tagged(tag: str) -> list[psutil.Process]:
    """The live processes whose environment carries `tag` (the upstreams and their launchers)."""
    found = []
    for process in psutil.process_iter(["status"]):
        try:
            if process.info["status"] != psutil.STATUS_ZOMBIE and process.environ().get(TAG) == tag:
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def _takes(pid: int, *signums: int) -> bool:
    """Whether process `pid` has a handler for each of `signums` (its SigCgt mask in /proc)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = int(next(line for line in status.splitlines() if line.startswith("SigCgt:")).split()[1], 16)
    return all(caught & (1 << (signum - 1)) for signum in signums)


class Launch:
    """`serve` over stdio, started as a background job is, its stderr lines kept as they come."""

    def __init__(self, config: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "nexus_gateway", "serve", "--config", str(config), "--log-level", "debug"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        )
        self.log: list[str] = []
        self.answers: list[dict[str, object]] = []
        threading.Thread(target=self._read_log, daemon=True).start()
        threading.Thread(target=self._read_answers, daemon=True).start()

    def _read_log(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line.decode(errors="replace"))

    def _read_answers(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.answers.append(json.loads(line))

    def until(self, what: str, seen: Callable[[], bool]) -> None:
        deadline = time.monotonic() + SEE_WITHIN
        while not seen():
            assert self.proc.poll() is None, f"serve exited before {what}: {''.join(self.log)[-2000:]}"
            assert time.monotonic() < deadline, f"no {what} within {SEE_WITHIN} s: {''.join(self.log)[-2000:]}"
            time.sleep(0.002)

    def logged(self, text: str) -> Callable[[], bool]:
        return lambda: any(text in line for line in list(self.log))


def _reach(launch: Launch, moment: str, tag: str) -> None:
    if moment == "signals taken":
        launch.until(moment, lambda: _takes(launch.proc.pid, signal.SIGINT, signal.SIGTERM))
    elif moment == "first upstream":
        launch.until(moment, lambda: bool(_tagged(tag)))
    elif moment == "adopted":
        launch.until(moment, launch.logged("took the process started early"))
    elif moment == "connected":
        launch.until(moment, launch.logged("connected over stdio"))
    elif moment == "heap settled":
        launch.until(moment, launch.logged("heap settled"))
    else:
        assert launch.proc.stdin is not None
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
        launch.proc.stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}).encode()
        )
        launch.proc.stdin.write(b'\n{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        launch.proc.stdin.flush()
        launch.until(moment, lambda: bool(launch.answers))


@pytest.mark.parametrize("moment", MOMENTS)
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_at_any_moment_of_start_up_ends_serve_and_every_upstream(tmp_path: Path, signum: int, moment: str):
    tag = uuid.uuid4().hex
    servers = {name: faulty(env={TAG: tag}) for name in ("a", "b")}
    launch = Launch(write_config(tmp_path, servers, mode="passthrough", watch=False))
    try:
        _reach(launch, moment, tag)
        launch.proc.send_signal(signum)
        sent = time.monotonic()
        try:
            launch.proc.wait(timeout=EXIT_WITHIN)
        except subprocess.TimeoutExpired:
            pytest.fail(f"serve still ran {EXIT_WITHIN} s after {signal.Signals(signum).name} at '{moment}'")
        took = time.monotonic() - sent
        survivors = _tagged(tag)
        _, alive = psutil.wait_procs(survivors, timeout=5)
        assert alive == [], f"upstream processes outlived serve ({moment}): {[p.cmdline() for p in alive]}"
        assert took < EXIT_WITHIN
    finally:
        if launch.proc.poll() is None:
            launch.proc.kill()
            launch.proc.wait()
        for process in _tagged(tag):
            process.kill()
