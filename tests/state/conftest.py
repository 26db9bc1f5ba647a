"""A real redis-server (Debian's `redis-server` package) on a free loopback port, without persistence, in a
temporary folder; stopped (and restartable on the same port) by the test."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import free_port, wait_for_port


class RedisServer:
    """One redis-server process; `stop` and `start` again keep its port (its data is gone: no persistence)."""

    def __init__(self, binary: str, folder: Path) -> None:
        self.binary = binary
        self.folder = folder
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        options = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "no"]
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), *options, "--dir", str(self.folder)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port, timeout=20)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
            self.process = None
            deadline = time.monotonic() + 10
            while not _port_free(self.port) and time.monotonic() < deadline:
                time.sleep(0.02)

    def client(self):  # type: ignore[no-untyped-def]
        import redis

        return redis.Redis.from_url(self.url, socket_timeout=5)


def _port_free(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail(
            "redis-server is not installed: the shared-state tests run a real Redis "
            "(apt-get install -y redis-server; scripts/test.sh installs it)"
        )
    folder = tmp_path / "redis"
    folder.mkdir()
    server = RedisServer(binary, folder)
    server.start()
    try:
        yield server
    finally:
        server.stop()
