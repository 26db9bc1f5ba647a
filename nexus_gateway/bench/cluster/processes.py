"""A cluster on loopback for the cluster bench and tests: gateway replicas (`serve --transport http`
processes), HAProxy in front of them with the config `deploy/haproxy.py` writes, and Redis when asked for.

HAProxy and Redis are the distribution's binaries (`apt-get install haproxy redis-server`); a missing one is a
`MissingBinary` naming the package.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexus_gateway.bench._serve import start_http
from nexus_gateway.deploy.haproxy import Balancer, render
from nexus_gateway.errors import NexusError

START_TIMEOUT = 30.0
"""Seconds a replica, HAProxy or Redis may take to be ready."""


class MissingBinary(NexusError):
    """A system program the cluster needs is not installed."""


def binary(name: str, package: str) -> str:
    """The path of `name` (searched in PATH and the sbin folders), or MissingBinary naming its package."""
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/local/sbin:/sbin")
    if found is None:
        raise MissingBinary(
            f"{name} is not installed: `apt-get install -y {package}` (scripts/test.sh installs it when it can)"
        )
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Replica:
    name: str
    config: Path
    process: subprocess.Popen[str]
    url: str
    """Its base URL (`http://127.0.0.1:PORT`)."""
    stderr: list[str] = field(default_factory=list)

    def kill(self) -> None:
        """SIGKILL: the replica dies as a crashed machine would, mid-request."""
        self.process.kill()
        self.process.wait(timeout=10)

    def start_again(self) -> None:
        """A new process on the same port (after `kill`)."""
        port = self.url.rsplit(":", 1)[1]
        self.stderr.clear()
        self.process, self.url = start_http(self.config, "--port", port, stderr_lines=self.stderr)


@dataclass
class Cluster:
    replicas: list[Replica]
    url: str
    """HAProxy's base URL (`/mcp`, `/sse`, ... through the balancer)."""
    stats_url: str
    haproxy: subprocess.Popen[bytes]
    folder: Path
    redis_url: str | None = None
    redis: subprocess.Popen[bytes] | None = None
    redis_persist: bool = False

    def stop_redis(self) -> None:
        assert self.redis is not None
        stop(self.redis)

    def start_redis_again(self) -> None:
        """Redis again on the same port, with what it persisted (if it did)."""
        assert self.redis_url is not None and self.redis is not None and self.redis.poll() is not None
        port = int(self.redis_url.rsplit(":", 1)[1].split("/")[0])
        self.redis, _ = start_redis(self.folder, port, persist=self.redis_persist)

    def server_states(self, backend: str = "by_session") -> dict[str, str]:
        """HAProxy's view of each replica in `backend`: gw1 -> UP, DOWN, MAINT..."""
        with urllib.request.urlopen(f"{self.stats_url}/stats;csv", timeout=5) as response:
            text = response.read().decode().lstrip("# ")
        rows = csv.DictReader(io.StringIO(text))
        return {
            row["svname"]: row["status"].split()[0]
            for row in rows
            if row["pxname"] == backend and row["svname"] not in ("FRONTEND", "BACKEND")
        }

    def wait_for_states(self, predicate: Callable[[dict[str, str]], bool], timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            states = self.server_states()
            if predicate(states):
                return
            time.sleep(0.05)
        raise TimeoutError(f"HAProxy's replicas did not reach the expected state in {timeout:g}s: {states}")


def replica_config(folder: Path, servers: Mapping[str, Any], **nexus: Any) -> Path:
    """A passthrough gateway config for one replica (no model: `run` off, no usage examples, hashing embedder)."""
    folder.mkdir(parents=True, exist_ok=True)
    settings = {
        "mode": "passthrough",
        "run": False,
        "usage_examples": False,
        "embedder": "hashing",
        "state_dir": str(folder / "state"),
        **nexus,
    }
    path = folder / "gateway.json"
    path.write_text(json.dumps({"mcpServers": dict(servers), "nexus": settings}))
    return path


def start_redis(folder: Path, port: int | None = None, *, persist: bool = False) -> tuple[subprocess.Popen[bytes], str]:
    """redis-server on `port` (a free one when None) of loopback; (process, redis:// URL) once it answers PING.
    `persist`: an append-only file in `folder`, as production runs it (a restart keeps the data), else nothing."""
    port = free_port() if port is None else port
    appendonly = "yes" if persist else "no"
    options = [
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        appendonly,
        "--dir",
        str(folder),
    ]
    process = subprocess.Popen(
        [binary("redis-server", "redis-server"), *options],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"redis-server exited with status {process.returncode} (port {port})")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    return process, f"redis://127.0.0.1:{port}/0"
        except OSError:
            pass
        time.sleep(0.02)
    process.kill()
    raise TimeoutError(f"redis-server did not answer on port {port} within {START_TIMEOUT:g}s")


def start_haproxy(
    folder: Path, servers: list[str], *, check_interval_ms: int = 500, token: str | None = None
) -> tuple[subprocess.Popen[bytes], str, str]:
    """HAProxy over `servers` (host:port) on free loopback ports; (process, URL, stats URL) once it listens."""
    port, stats = free_port(), free_port()
    balancer = Balancer(
        bind=f"127.0.0.1:{port}", check_interval_ms=check_interval_ms, fall=1, rise=1, stats_bind=f"127.0.0.1:{stats}"
    )
    config = folder / f"haproxy-{port}.cfg"
    config.write_text(render(servers, balancer))
    env = {key: value for key, value in os.environ.items() if key != "NEXUS_HEALTH_TOKEN"}
    if token is not None:
        env["NEXUS_HEALTH_TOKEN"] = token
    log = folder / f"haproxy-{port}.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [binary("haproxy", "haproxy"), "-db", "-f", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=env,
        )
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            error = log.read_text(errors="replace")
            raise RuntimeError(f"haproxy exited with status {process.returncode}: {error[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", stats), timeout=1):
                break
        except OSError:
            time.sleep(0.02)
    else:
        process.kill()
        raise TimeoutError(f"haproxy did not listen within {START_TIMEOUT:g}s")
    return process, f"http://127.0.0.1:{port}", f"http://127.0.0.1:{stats}"


def stop(process: subprocess.Popen[Any]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _stop_all(cluster: Cluster) -> None:
    for replica in cluster.replicas:
        stop(replica.process)
    if cluster.redis is not None:
        stop(cluster.redis)


@contextmanager
def running_cluster(
    folder: Path,
    servers: Callable[[str], Mapping[str, Any]],
    *,
    replicas: int = 3,
    redis: bool = False,
    redis_persist: bool = False,
    token: str | None = None,
    check_interval_ms: int = 500,
    **nexus: Any,
) -> Iterator[Cluster]:
    """`replicas` gateways named r1, r2, ... (each its own config from `servers(name)` and `nexus` settings, its
    own state dir), Redis when `redis` (its URL in every replica's `cluster.redis_url`; `redis_persist`: with an
    append-only file), and HAProxy in front,
    every replica UP in HAProxy's checks. `token`: every replica's bearer token, sent by the health checks too."""
    with ExitStack() as stack:
        redis_process = redis_url = None
        if redis:
            redis_process, redis_url = start_redis(folder, persist=redis_persist)
            stack.callback(stop, redis_process)
            nexus = {**nexus, "cluster": {**nexus.get("cluster", {}), "redis_url": redis_url}}
        if token is not None:
            nexus = {**nexus, "auth_tokens": [token]}
        configs = {f"r{n}": replica_config(folder / f"r{n}", servers(f"r{n}"), **nexus) for n in range(1, replicas + 1)}
        logs: dict[str, list[str]] = {name: [] for name in configs}
        with ThreadPoolExecutor(max_workers=replicas) as pool:  # they start side by side
            starts = {
                name: pool.submit(start_http, config, stderr_lines=logs[name]) for name, config in configs.items()
            }
        started: list[Replica] = []
        for name, start in starts.items():
            if start.exception() is None:
                process, url = start.result()
                stack.callback(stop, process)
                started.append(Replica(name, configs[name], process, url, logs[name]))
        for start in starts.values():
            start.result()  # the first failure to start, raised once every started replica will be stopped
        haproxy, url, stats = start_haproxy(
            folder,
            [replica.url.removeprefix("http://") for replica in started],
            check_interval_ms=check_interval_ms,
            token=token,
        )
        stack.callback(stop, haproxy)
        cluster = Cluster(started, url, stats, haproxy, folder, redis_url, redis_process, redis_persist)
        stack.callback(_stop_all, cluster)  # the restarted replicas and Redis too
        cluster.wait_for_states(lambda states: len(states) == replicas and set(states.values()) == {"UP"})
        yield cluster
