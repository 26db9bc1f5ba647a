"""Load on the streamable-HTTP front: N concurrent clients calling a real upstream through the gateway.

The gateway runs as a real process (`serve --transport http`, passthrough) with the echo server
(echo_server.py) behind it. For each client count, that many clients open their own session at once and
each sends `calls` `tools/call` requests one after the other; the report gives calls/s, p50/p99 latency,
errors, and the gateway process's RSS and open file descriptors before and after. With `flood`, a
session flood runs during every level: workers POST `initialize` requests and never DELETE the
sessions (the attack of issue 10.3). The gateway must evict the flood's idle sessions rather than turn
the real clients away, so the flood costs the real clients no errors. Compare numbers within one run;
absolute figures depend on the machine (and on what else runs on it).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx
import numpy as np
import psutil
from mcp import Client

from nexus_gateway.bench._serve import http_gateway

ECHO = Path(__file__).resolve().parent / "echo_server.py"
TOOL = "echo__echo"
Era = Literal["legacy", "modern"]

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "flood", "version": "0"}},
}
POST_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def write_config(folder: Path, **nexus: Any) -> Path:
    """Passthrough mode with the echo server as the one upstream."""
    config = folder / "bench-load.json"
    servers = {"echo": {"command": sys.executable, "args": [str(ECHO)]}}
    settings = {"mode": "passthrough", "run": False, "embedder": "hashing", "state_dir": str(folder), **nexus}
    config.write_text(json.dumps({"mcpServers": servers, "nexus": settings}))
    return config


@contextmanager
def gateway_process(config: Path) -> Iterator[tuple[str, psutil.Process]]:
    """A gateway process on a free loopback port; yields (base URL, the process to measure)."""
    with http_gateway(config) as (proc, url):
        yield url, psutil.Process(proc.pid)


def usage(process: psutil.Process) -> dict[str, float]:
    return {"rss_mib": round(process.memory_info().rss / 2**20, 1), "fds": process.num_fds()}


async def flood(url: str, stop: anyio.Event, statuses: Counter[int], workers: int = 4) -> None:
    """POST `initialize` from `workers` loops until `stop`, never deleting a session; counts the statuses."""

    async def worker(http: httpx.AsyncClient) -> None:
        while not stop.is_set():
            try:
                response = await http.post(f"{url}/mcp", json=INITIALIZE, headers=POST_HEADERS)
                statuses[response.status_code] += 1
            except httpx.HTTPError:
                statuses[0] += 1

    async with httpx.AsyncClient(timeout=30) as http, anyio.create_task_group() as group:
        for _ in range(workers):
            group.start_soon(worker, http)


def _client(url: str, era: Era) -> Client:
    return Client(f"{url}/mcp", mode="legacy" if era == "legacy" else "auto", cache=None)


async def level(url: str, clients: int, calls: int, era: Era) -> dict[str, Any]:
    """`clients` sessions opened at once, each sending `calls` calls in turn; the summary of the calls."""
    latencies: list[float] = []
    failures: list[str] = []

    async def one(client: Client, index: int) -> None:
        for call in range(calls):
            start = time.perf_counter()
            try:
                result = await client.call_tool(TOOL, {"text": f"{index}:{call}"})
                if result.is_error:
                    failures.append(f"is_error: {result.content}")
            except Exception as exc:  # boundary: a failed call is counted, the run goes on
                failures.append(repr(exc))
            latencies.append(time.perf_counter() - start)

    async with AsyncExitStack() as stack:
        sessions = []
        for _ in range(clients):
            try:
                sessions.append(await stack.enter_async_context(_client(url, era)))
            except Exception as exc:  # boundary: a refused session is an error of this level
                failures.extend([f"connect: {exc!r}"] * calls)
        start = time.perf_counter()
        async with anyio.create_task_group() as group:
            for index, session in enumerate(sessions):
                group.start_soon(one, session, index)
        wall = time.perf_counter() - start
    ms = np.asarray(latencies) * 1000.0
    return {
        "clients": clients,
        "calls": clients * calls,
        "errors": len(failures),
        "calls_per_s": round(len(latencies) / wall, 1) if wall else 0.0,
        "latency_ms_p50": round(float(np.percentile(ms, 50)), 2) if len(ms) else None,
        "latency_ms_p99": round(float(np.percentile(ms, 99)), 2) if len(ms) else None,
        "first_errors": failures[:5],
    }


async def run_load_bench(
    client_counts: list[int], calls: int, *, with_flood: bool, era: Era = "legacy", max_sessions: int = 256
) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory() as folder,
        gateway_process(write_config(Path(folder), max_sessions=max_sessions)) as (
            url,
            process,
        ),
    ):
        async with _client(url, era) as warm:  # the first call pays for imports and the upstream's start
            await warm.call_tool(TOOL, {"text": "warm"})
        levels = []
        for clients in client_counts:
            before = usage(process)
            statuses: Counter[int] = Counter()
            stop = anyio.Event()
            async with anyio.create_task_group() as group:
                if with_flood:
                    group.start_soon(flood, url, stop, statuses)
                result = await level(url, clients, calls, era)
                stop.set()
            after = usage(process)
            levels.append({**result, "before": before, "after": after})
            if with_flood:
                levels[-1]["flood"] = {"initialize_posts": sum(statuses.values()), "statuses": dict(statuses)}
        async with httpx.AsyncClient() as http:
            metrics = (await http.get(f"{url}/metrics")).text
    sessions = {
        line.split()[0]: float(line.split()[1]) for line in metrics.splitlines() if line.startswith("nexus_http_")
    }
    return {
        "era": era,
        "transport": "streamable-http",
        "upstream": "bench/echo_server.py over stdio (passthrough)",
        "calls_per_client": calls,
        "flood": with_flood,
        "max_sessions": max_sessions,
        "levels": levels,
        "session_metrics_at_end": sessions,
        "cpu_count": os.cpu_count(),
        "load_average_1m_at_end": round(os.getloadavg()[0], 2),
    }


def run(client_counts: list[int], calls: int, *, with_flood: bool, era: Era, max_sessions: int) -> dict[str, Any]:
    return anyio.run(
        lambda: run_load_bench(client_counts, calls, with_flood=with_flood, era=era, max_sessions=max_sessions)
    )
