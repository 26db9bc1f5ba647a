"""Shared helpers for the verification scripts: processes, ports, the gateway's /healthz, RSS.

Standard library only, so the scripts run with any Python that can run the gateway.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PYTHON = os.environ.get("PYTHON") or (
    str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv" / "bin" / "python").exists() else sys.executable
)
"""The gateway's interpreter: $PYTHON, else the repository's .venv, else this one."""


def log(*parts: object) -> None:
    print("[verify]", *parts, file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def gateway_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra or {})
    return env


def start(
    cmd: list[str], *, log_path: Path, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """Start a process in its own process group, stdout+stderr to `log_path`."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    handle = log_path.open("wb")
    return subprocess.Popen(
        cmd, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=cwd, start_new_session=True
    )


def stop(proc: subprocess.Popen[bytes] | None, *, grace: float = 10.0) -> None:
    """SIGTERM the process group, then SIGKILL it if it outlives `grace` seconds."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


def http_get_json(url: str, timeout: float = 2.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())


def wait_port(port: int, *, timeout: float, proc: subprocess.Popen[bytes] | None = None) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        with socket.socket() as sock:
            sock.settimeout(0.5)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.2)
    return False


def healthz(port: int) -> dict[str, Any] | None:
    try:
        body = http_get_json(f"http://127.0.0.1:{port}/healthz")
    except (OSError, urllib.error.URLError, ValueError):
        return None
    return body if isinstance(body, dict) else None


def wait_healthy(
    port: int, names: set[str], *, timeout: float, proc: subprocess.Popen[bytes] | None = None, poll: float = 0.5
) -> tuple[float | None, dict[str, Any] | None]:
    """Poll /healthz until every upstream in `names` is healthy; (seconds, last body) or (None, last body)."""
    began = time.monotonic()
    last: dict[str, Any] | None = None
    while time.monotonic() - began < timeout:
        if proc is not None and proc.poll() is not None:
            return None, last
        body = healthz(port)
        if body is not None:
            last = body
            states = body.get("upstreams", {})
            if all(states.get(name) == "healthy" for name in names):
                return time.monotonic() - began, body
        time.sleep(poll)
    return None, last


def tree_rss_kib(pid: int) -> tuple[int, int, int]:
    """(RSS of `pid`, RSS of all its descendants, number of descendants), in KiB, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            status = (entry / "status").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                rss[int(entry.name)] = int(line.split()[1])
    own = rss.get(pid, 0)
    total, count, stack = 0, 0, list(children.get(pid, []))
    while stack:
        child = stack.pop()
        total += rss.get(child, 0)
        count += 1
        stack.extend(children.get(child, []))
    return own, total, count


def git_commit() -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
