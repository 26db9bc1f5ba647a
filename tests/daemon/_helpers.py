"""Real daemons and shims for the daemon tests: configs with a short state folder (a Unix socket path has at
most 107 bytes), the processes they start (found with psutil), and cleanup that leaves none behind."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import psutil
from mcp import Client, StdioServerParameters

from nexus_gateway.daemon.locate import DaemonFiles


def shim(config: Path, *extra: str) -> StdioServerParameters:
    """How a host launches the shared gateway: `nexus-gateway connect --config CONFIG`."""
    return StdioServerParameters(
        command=sys.executable, args=["-m", "nexus_gateway", "connect", "--config", str(config), *extra]
    )


def host(config: Path, era: str, *extra: str, **options: Any) -> Client:
    return Client(shim(config, *extra), mode=era, cache=None, **options)


@contextmanager
def daemon_config(servers: dict[str, Any], **nexus: Any) -> Iterator[tuple[Path, DaemonFiles]]:
    """A config file whose state folder is short; on the way out the daemon (and its upstreams) is stopped
    or, failing that, killed."""
    folder = Path(tempfile.mkdtemp(prefix="nxd", dir="/tmp"))
    nexus = {"state_dir": str(folder / "s"), "restart_backoff_initial": 0.1, **nexus}
    config = folder / "gateway.json"
    config.write_text(json.dumps({"mcpServers": servers, "nexus": nexus}))
    files = DaemonFiles.of(folder / "s")
    try:
        yield config, files
    finally:
        cli("daemon", "stop", "--config", str(config), timeout=60)
        for process in daemons(config):
            kill_tree(process)
        shutil.rmtree(folder, ignore_errors=True)


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nexus_gateway", *args], capture_output=True, text=True, timeout=timeout
    )


def daemons(config: Path) -> list[psutil.Process]:
    """Every live `nexus-gateway daemon` process of `config`."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        cmdline = process.info["cmdline"] or []
        if process.info["status"] != psutil.STATUS_ZOMBIE and "daemon" in cmdline and str(config) in cmdline:
            found.append(process)
    return found


def upstreams(pid: int, script: str) -> list[psutil.Process]:
    """The live upstream processes under daemon `pid` that run `script` (not their `_launch.py` wrappers)."""
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    return [child for child in children if _runs(child, script) and not _runs_launcher(child)]


def _runs_launcher(process: psutil.Process) -> bool:
    try:
        return any(part.endswith("_launch.py") for part in process.cmdline())
    except psutil.NoSuchProcess:
        return False


def _runs(process: psutil.Process, script: str) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE and script in process.cmdline()
    except psutil.NoSuchProcess:
        return False


def shims(config: Path) -> list[psutil.Process]:
    """This test's live `connect` processes of `config`, oldest first."""
    children = psutil.Process().children(recursive=True)
    found = [child for child in children if _runs(child, "connect") and _runs(child, str(config))]
    return sorted(found, key=lambda process: process.create_time())


def kill_tree(process: psutil.Process) -> None:
    try:
        tree = [process, *process.children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    for each in tree:
        with suppress(psutil.NoSuchProcess):
            each.kill()
    psutil.wait_procs(tree, timeout=10)


def status(config: Path) -> dict[str, Any]:
    done = cli("daemon", "status", "--config", str(config), "--json")
    return dict(json.loads(done.stdout))


async def eventually(check: Any, seconds: float = 60, what: str = "") -> Any:
    """Poll `check()` (a sync callable) until it returns something truthy, at most `seconds`."""
    with anyio.fail_after(seconds):
        while not (value := check()):
            await anyio.sleep(0.05)
    return value
