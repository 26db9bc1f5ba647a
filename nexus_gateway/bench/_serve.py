"""A real `nexus-gateway serve --transport http` process, for benchmarks and integration tests."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_LISTENING = re.compile(r"listening on (http://\S+)")


def start_http(config: Path, *extra: str, stderr_lines: list[str] | None = None) -> tuple[subprocess.Popen[str], str]:
    """Start the gateway on a free loopback port (port 0) and return (process, base URL) once it listens.

    Its stderr is read to the end by a daemon thread from then on, so a full pipe never stalls it; the
    lines go to `stderr_lines` when given (those before the listening line too)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nexus_gateway",
            "serve",
            "--config",
            str(config),
            "--transport",
            "http",
            "--port",
            "0",
            *extra,
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    lines = [] if stderr_lines is None else stderr_lines
    for line in proc.stderr:
        lines.append(line)
        if match := _LISTENING.search(line):
            threading.Thread(target=_drain, args=(proc, stderr_lines), daemon=True).start()
            return proc, match.group(1)
    raise RuntimeError(f"the gateway exited before listening (status {proc.wait()}): {''.join(lines[-20:])}")


@contextmanager
def http_gateway(config: Path, *extra: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`start_http` for a `with` block: SIGTERM on the way out (a kill after 30 s)."""
    proc, url = start_http(config, *extra)
    try:
        yield proc, url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _drain(proc: subprocess.Popen[str], lines: list[str] | None) -> None:
    assert proc.stderr is not None
    for line in proc.stderr:
        if lines is not None:
            lines.append(line)
