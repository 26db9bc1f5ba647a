"""Throughput of `run` with concurrent clients: N clients, each its own streamable-HTTP session, at once.

Every client session is its own sequence in the one llama.cpp context (generation/sessions.py) and the
engine serves one job at a time, so concurrency cannot make a generation faster; what it can do is keep
the engine busy while other requests are routed, validated and called upstream, and it must not mix
clients up. This measures both: the gateway runs as a real process (`serve --transport http`) with the
example weather server behind it, `clients` clients each send `requests_per_client` `run` requests for
varied cities, and an answer is correct when it was called with that request's city. The same workload
is then sent by one client, one request after the other, and the report gives the ratio: compare the
two within one run, not absolute times across machines.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from mcp import Client

from nexus_gateway.bench._serve import http_gateway
from nexus_gateway.errors import ConfigError

logger = logging.getLogger(__name__)

WEATHER = Path(__file__).resolve().parents[2] / "examples" / "servers" / "weather_server.py"
TOOL = "weather__get_current_weather"
REQUEST = "What is the current weather in {city}?"
CITIES = ("Paris", "Tokyo", "London", "Lima", "Cairo", "Sydney", "Toronto", "Berlin", "Madrid", "Rome")
"""Cities the packaged 270M model fills right alone (it writes "O" for Oslo); varied across requests."""


@dataclass(frozen=True)
class Outcome:
    city: str
    seconds: float
    correct: bool
    error: bool
    detail: dict[str, Any]


def _config(folder: Path) -> Path:
    """Routed mode with `run` on and the weather example server as the one upstream."""
    if not WEATHER.exists():
        raise ConfigError(f"bench run drives the example weather server, {WEATHER}: run it from a source checkout")
    config = folder / "bench-run.json"
    servers = {"weather": {"command": sys.executable, "args": [str(WEATHER)]}}
    config.write_text(
        json.dumps({"mcpServers": servers, "nexus": {"mode": "routed", "run": True, "state_dir": str(folder)}})
    )
    return config


@contextmanager
def gateway_process(config: Path) -> Iterator[str]:
    """A `nexus-gateway serve --transport http` process on a free loopback port; yields its base URL."""
    with http_gateway(config) as (_, url):
        yield url


def _judge(city: str, result: Any) -> tuple[bool, bool, dict[str, Any]]:
    """(correct, error, detail) of one `run` answer: correct when called with `city` as the city."""
    structured = result.structured_content or {}
    trace = structured.get("trace") or {}
    arguments = trace.get("arguments") or {}
    correct = structured.get("status") == "called" and arguments.get("city") == city and not result.is_error
    detail = {
        "city": city,
        "status": structured.get("status"),
        "tool": trace.get("tool"),
        "arguments": arguments,
        "routing": trace.get("routing"),
        "session_depth": trace.get("session_depth"),
    }
    return correct, bool(result.is_error), detail


async def _ask(client: Client, city: str) -> Outcome:
    start = time.perf_counter()
    try:
        result = await client.call_tool("run", {"request": REQUEST.format(city=city)})
    except Exception as exc:  # boundary: a failed call is counted as an error, the run goes on
        return Outcome(city, time.perf_counter() - start, False, True, {"city": city, "exception": repr(exc)})
    correct, error, detail = _judge(city, result)
    return Outcome(city, time.perf_counter() - start, correct, error, detail)


def _cities(client: int, requests_per_client: int) -> list[str]:
    """The cities one client asks about, in order: each client starts at a different one."""
    return [CITIES[(client + i) % len(CITIES)] for i in range(requests_per_client)]


async def _workload(url: str, clients: int, requests_per_client: int) -> dict[str, Any]:
    """`clients` sessions at once, each sending its requests one after the other; the summary."""
    outcomes: list[Outcome] = []

    async def client_loop(client: Client, cities: list[str]) -> None:
        for city in cities:
            outcomes.append(await _ask(client, city))

    async with AsyncExitStack() as stack:
        sessions = [
            await stack.enter_async_context(Client(f"{url}/mcp", mode="legacy", cache=None)) for _ in range(clients)
        ]
        load = os.getloadavg()[0]
        start = time.perf_counter()
        async with anyio.create_task_group() as group:
            for index, session in enumerate(sessions):
                group.start_soon(client_loop, session, _cities(index, requests_per_client))
        wall = time.perf_counter() - start
    return _summary(clients, outcomes, wall, load)


def _percentile(seconds: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(seconds) * 1000.0, q)), 1) if seconds else 0.0


def _summary(clients: int, outcomes: list[Outcome], wall: float, load: float) -> dict[str, Any]:
    latencies = [outcome.seconds for outcome in outcomes]
    wrong = [outcome.detail for outcome in outcomes if not outcome.correct]
    return {
        "clients": clients,
        "requests": len(outcomes),
        "correct": sum(outcome.correct for outcome in outcomes),
        "errors": sum(outcome.error for outcome in outcomes),
        "right_tool": sum(outcome.detail.get("tool") == TOOL for outcome in outcomes),
        "wall_s": round(wall, 2),
        "throughput_rps": round(len(outcomes) / wall, 3) if wall else 0.0,
        "latency_ms_p50": _percentile(latencies, 50),
        "latency_ms_p90": _percentile(latencies, 90),
        "load_average_1m_at_start": round(load, 2),
        "wrong": wrong[:20],
    }


async def _warm(url: str) -> float:
    """One unmeasured call: the model loads on the first `run`."""
    start = time.perf_counter()
    async with Client(f"{url}/mcp", mode="legacy", cache=None) as client:
        await _ask(client, CITIES[0])
    return round(time.perf_counter() - start, 2)


async def run_run_bench(clients: int = 8, requests_per_client: int = 3) -> dict[str, Any]:
    """`clients` concurrent clients, then the same requests from one client; both summaries and the ratio."""
    with tempfile.TemporaryDirectory() as tmp, gateway_process(_config(Path(tmp))) as url:
        warmup_s = await _warm(url)
        logger.info("model loaded in %.1f s; %d clients x %d requests", warmup_s, clients, requests_per_client)
        concurrent = await _workload(url, clients, requests_per_client)
        logger.info("concurrent: %s", {k: v for k, v in concurrent.items() if k != "wrong"})
        single = await _workload(url, 1, clients * requests_per_client) if clients > 1 else concurrent
        logger.info("one client: %s", {k: v for k, v in single.items() if k != "wrong"})
    ratio = concurrent["throughput_rps"] / single["throughput_rps"] if single["throughput_rps"] else 0.0
    return {
        **concurrent,
        "requests_per_client": requests_per_client,
        "one_client": single,
        "throughput_ratio": round(ratio, 3),
        "warmup_s": warmup_s,
        "workload": {"request": REQUEST, "tool": TOOL, "cities": list(CITIES), "transport": "streamable-http"},
        "engine": "packaged default (Qwen2.5-Coder-0.5B-Instruct), default settings",
        "cpu_count": os.cpu_count(),
    }


def run(clients: int, requests_per_client: int) -> dict[str, Any]:
    return anyio.run(run_run_bench, clients, requests_per_client)
