"""Upstream processes, and what they start, do not outlive the gateway (real processes, psutil).

Three upstreams, each with a grandchild: one exits when its stdin closes (its grandchild stays), one
keeps running, one keeps running and ignores SIGTERM, as does its grandchild.
"""

import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import ROOT, start_gateway_http, stdio_entry, write_config

FAMILY = str(ROOT / "tests" / "servers" / "family_server.py")
BEHAVIOURS = {
    "exits-on-stdin-close": [],
    "keeps-running": ["--keep-running"],
    "keeps-running-and-ignores-sigterm": ["--keep-running", "--ignore-sigterm"],
}


def living(processes: list[psutil.Process]) -> list[psutil.Process]:
    alive = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                alive.append(process)
        except psutil.NoSuchProcess:
            pass
    return alive


def wait_until_gone(processes: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    while (alive := living(processes)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def start_with_families(tmp_path: Path) -> tuple[subprocess.Popen[str], list[psutil.Process]]:
    """A gateway process with one upstream per behaviour, each with a grandchild; it and every process under it."""
    servers = {name: stdio_entry(FAMILY, *flags) for name, flags in BEHAVIOURS.items()}
    config = write_config(tmp_path, servers, mode="passthrough", embedder="hashing")
    gateway, _ = start_gateway_http(config)
    deadline = time.monotonic() + 20
    grandchildren: list[psutil.Process] = []
    while len(grandchildren) < len(BEHAVIOURS) and time.monotonic() < deadline:
        time.sleep(0.05)
        descendants = psutil.Process(gateway.pid).children(recursive=True)
        grandchildren = [p for p in descendants if "time.sleep(3600)" in " ".join(p.cmdline())]
    assert len(grandchildren) == len(BEHAVIOURS), "an upstream never started its grandchild"
    return gateway, psutil.Process(gateway.pid).children(recursive=True)


def test_sigterm_to_the_gateway_ends_every_upstream_and_grandchild(tmp_path: Path):
    gateway, family = start_with_families(tmp_path)
    gateway.send_signal(signal.SIGTERM)
    gateway.wait(timeout=20)
    assert wait_until_gone(family, timeout=10) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's (README: reliability)")
def test_sigkill_of_the_gateway_ends_every_upstream_and_grandchild_on_linux(tmp_path: Path):
    gateway, family = start_with_families(tmp_path)
    gateway.kill()
    gateway.wait(timeout=10)
    assert wait_until_gone(family, timeout=10) == []
