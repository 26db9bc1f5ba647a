"""What a cluster adds to tools/call: gateway replicas behind HAProxy (with Redis as their shared store) against
one gateway called directly, on loopback.

It starts everything itself (`processes.py`): Redis when `redis-server` is installed, three replicas
(`serve --transport http`, passthrough, in front of the echo upstream, `cluster.redis_url` set when Redis runs),
one HAProxy per replica count (1, 2, 3) over them, and a single gateway with the single-machine default (files in
its state directory, no Redis). Phases:

- latency, per era (`modern`: 2026-07-28, every request to any replica; `legacy`: one handshake-era session
  each, kept on its replica): one call on the single gateway, one through HAProxy (3 replicas), one on a replica
  directly, in turn, so that every path samples the same moments; `added_ms_p50` is the cluster's p50 less the
  single gateway's, `added_ms_paired_median` the median of the differences of calls made side by side;
- Redis round trips on the tools/call hot path: the store's own counter (`nexus_store_round_trips_total` of every
  replica's /metrics) and Redis's `total_commands_processed` (less the commands of an idle interval as long), over
  the measured cluster calls;
- throughput: calls/s of `clients` concurrent modern-era clients through HAProxy over 1, 2 and 3 replicas, the
  replica counts visited in turn over `rounds` rounds. On a machine with few cores every replica shares them with
  the others, HAProxy and the clients: the figures show overhead, not scaling.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path
from typing import Any, Literal

import anyio
from mcp import Client

from nexus_gateway.bench._serve import start_http
from nexus_gateway.bench.cluster.processes import (
    Cluster,
    MissingBinary,
    binary,
    replica_config,
    running_cluster,
    start_haproxy,
    stop,
)

ECHO = [sys.executable, str(Path(__file__).resolve().parent.parent / "echo_server.py")]
TOOL = "echo__echo"
CALL = {"text": "ping"}
Era = Literal["modern", "legacy"]
MODES: dict[Era, str] = {"modern": "auto", "legacy": "legacy"}
TIMEOUT = 120.0
TWO_CORE_NOTE = (
    "Every replica, HAProxy, Redis and the clients share this machine's cores: with few cores, calls/s over 1, 2 "
    "and 3 replicas shows the cluster's overhead, not how it scales on separate machines."
)


def _servers(name: str) -> dict[str, Any]:
    return {"echo": {"command": ECHO[0], "args": ECHO[1:]}}


def _percentile(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    rank = (len(ordered) - 1) * q / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return (ordered[low] + (ordered[high] - ordered[low]) * (rank - low)) * 1000.0


def _paired(path: Sequence[float], baseline: Sequence[float]) -> float:
    """The median of the differences between calls made side by side (the same round of `_latency`), in ms: less
    moved by load that drifts over the run than the difference of two medians."""
    return round(statistics.median(a - b for a, b in zip(path, baseline, strict=True)) * 1000.0, 4)


def _client(url: str, era: Era) -> Client:
    return Client(f"{url}/mcp", mode=MODES[era], cache=None, read_timeout_seconds=TIMEOUT)


async def _call(client: Client) -> float:
    started = time.perf_counter()
    result = await client.call_tool(TOOL, CALL)
    elapsed = time.perf_counter() - started
    if result.is_error:
        raise RuntimeError(f"benchmark call failed: {result.content}")
    return elapsed


def _store_round_trips(urls: Sequence[str]) -> dict[str, int] | None:
    """The store's round trips so far by use, summed over the gateways' /metrics; None when none counts them."""
    total: dict[str, int] = {}
    counted = False
    for url in urls:
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
            for line in response.read().decode().splitlines():
                if line.startswith("nexus_store_round_trips_total"):
                    use = line.partition('use="')[2].partition('"')[0] or "all"
                    total[use] = total.get(use, 0) + int(float(line.rsplit(" ", 1)[1]))
                    counted = True
                elif line.startswith("# TYPE nexus_store_round_trips_total"):
                    counted = True
    return total if counted else None


def _redis_commands(redis_url: str | None) -> int | None:
    """Redis's total_commands_processed (the INFO asking for it counts as one); None without Redis."""
    if redis_url is None:
        return None
    host, _, port = redis_url.removeprefix("redis://").split("/")[0].partition(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock, sock.makefile("rb") as reply:
        sock.sendall(b"INFO stats\r\n")
        header = reply.readline()  # $<length>
        body = reply.read(int(header[1:]) + 2).decode()
    for line in body.splitlines():
        if line.startswith("total_commands_processed:"):
            return int(line.split(":", 1)[1])
    raise RuntimeError("Redis's INFO stats has no total_commands_processed")


def _delta(after: dict[str, int] | None, before: dict[str, int] | None) -> dict[str, int] | None:
    if after is None or before is None:
        return None
    return {use: count - before.get(use, 0) for use, count in after.items() if count - before.get(use, 0)}


def _store_states(urls: Sequence[str]) -> list[Any]:
    states = []
    for url in urls:
        with urllib.request.urlopen(f"{url}/healthz", timeout=10) as response:
            states.append(json.loads(response.read()).get("store"))
    return states


async def _latency(paths: dict[str, Client], calls: int, warmup: int) -> dict[str, list[float]]:
    """`calls` calls per path, one on each in turn (the order rotated every call)."""
    names = list(paths)
    for name in names:
        for _ in range(warmup):
            await _call(paths[name])
    samples: dict[str, list[float]] = {name: [] for name in names}
    for number in range(calls):
        shift = number % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(await _call(paths[name]))
    return samples


async def _throughput(urls: dict[str, str], clients: int, calls: int, rounds: int) -> dict[str, float]:
    """calls/s of `clients` concurrent modern-era clients through each balancer, visited in turn each round."""
    elapsed = dict.fromkeys(urls, 0.0)
    share = max(1, calls // (clients * rounds))
    async with AsyncExitStack() as stack:
        opened = {
            key: [await stack.enter_async_context(_client(url, "modern")) for _ in range(clients)]
            for key, url in urls.items()
        }
        for key in urls:  # warm every connection
            for client in opened[key]:
                await _call(client)
        keys = list(urls)
        for round_ in range(rounds):
            shift = round_ % len(keys)
            for key in keys[shift:] + keys[:shift]:

                async def worker(client: Client) -> None:
                    for _ in range(share):
                        await _call(client)

                started = time.perf_counter()
                async with anyio.create_task_group() as tg:
                    for client in opened[key]:
                        tg.start_soon(worker, client)
                elapsed[key] += time.perf_counter() - started
    return {key: round(share * clients * rounds / seconds, 1) for key, seconds in elapsed.items()}


async def _measure(
    cluster: Cluster,
    single: str,
    balancers: dict[str, str],
    *,
    calls: int,
    warmup: int,
    clients: int,
    throughput_calls: int,
    rounds: int,
) -> dict[str, Any]:
    replicas = [replica.url for replica in cluster.replicas]
    by_era: dict[str, Any] = {}
    round_trips: dict[str, Any] = {}
    for era in ("modern", "legacy"):
        async with AsyncExitStack() as stack:
            paths = {
                "single": await stack.enter_async_context(_client(single, era)),
                "cluster": await stack.enter_async_context(_client(cluster.url, era)),
                "replica_direct": await stack.enter_async_context(_client(replicas[0], era)),
            }
            store_before, redis_before = _store_round_trips(replicas), _redis_commands(cluster.redis_url)
            started = time.perf_counter()
            samples = await _latency(paths, calls, warmup)
            measured_s = time.perf_counter() - started
            store_after, redis_after = _store_round_trips(replicas), _redis_commands(cluster.redis_url)
        p50 = {name: _percentile(values, 50) for name, values in samples.items()}
        p99 = {name: _percentile(values, 99) for name, values in samples.items()}
        by_era[era] = {
            "single_ms_p50": round(p50["single"], 4),
            "cluster_ms_p50": round(p50["cluster"], 4),
            "replica_direct_ms_p50": round(p50["replica_direct"], 4),
            "added_ms_p50": round(p50["cluster"] - p50["single"], 4),
            "haproxy_added_ms_p50": round(p50["cluster"] - p50["replica_direct"], 4),
            "added_ms_paired_median": _paired(samples["cluster"], samples["single"]),
            "haproxy_added_ms_paired_median": _paired(samples["cluster"], samples["replica_direct"]),
            "single_ms_p99": round(p99["single"], 4),
            "cluster_ms_p99": round(p99["cluster"], 4),
            "calls": calls,
        }
        cluster_calls = calls + warmup  # the warm-up calls through HAProxy are inside the window too
        # Each replica's counter covers every call it served: through HAProxy and (r1) directly.
        replica_calls = cluster_calls * 2
        idle_store, idle_redis = await _idle(cluster.redis_url, replicas, measured_s)
        by_use = _delta(store_after, store_before)
        round_trips[era] = {
            "seconds": round(measured_s, 2),
            "replica_calls": replica_calls,
            "store_round_trips": None if by_use is None else sum(by_use.values()),
            "store_round_trips_by_use": by_use,
            "store_round_trips_idle_same_time": idle_store,
            "redis_commands": None if redis_before is None or redis_after is None else redis_after - redis_before - 1,
            "redis_commands_idle_same_time": idle_redis,
        }
    throughput = await _throughput(balancers, clients, throughput_calls, rounds)
    modern = by_era["modern"]
    return {
        "single_ms_p50": modern["single_ms_p50"],
        "cluster_ms_p50": modern["cluster_ms_p50"],
        "added_ms_p50": modern["added_ms_p50"],
        "redis_round_trips_per_call": _per_call(round_trips["modern"]),
        "redis_round_trips_per_call_with_background": _with_background(round_trips["modern"]),
        "calls_per_s": throughput,
        "by_era": by_era,
        "redis": round_trips,
        "store": _store_states(replicas),
    }


async def _idle(redis_url: str | None, replicas: Sequence[str], seconds: float) -> tuple[int | None, int | None]:
    """The store's round trips and Redis's commands (less the INFOs) over `seconds` with no calls: the replicas'
    background traffic, whatever the calls (sampled for up to 10 s and scaled)."""
    sampled = min(seconds, 10.0)
    store_before, redis_before = _store_round_trips(replicas), _redis_commands(redis_url)
    await anyio.sleep(sampled)
    store_after, redis_after = _store_round_trips(replicas), _redis_commands(redis_url)
    by_use = _delta(store_after, store_before)
    store = None if by_use is None else round(sum(by_use.values()) * seconds / sampled)
    redis = (
        None
        if redis_before is None or redis_after is None
        else round((redis_after - redis_before - 1) * seconds / sampled)
    )
    return store, redis


def _per_call(counts: dict[str, Any]) -> float | None:
    """Round trips per tools/call on the hot path: those of the measured window less the background ones of an idle
    window as long (never below 0); from the store's own counter when it keeps one, else from Redis's commands."""
    calls = counts["replica_calls"]
    for during, idle in (
        ("store_round_trips", "store_round_trips_idle_same_time"),
        ("redis_commands", "redis_commands_idle_same_time"),
    ):
        if counts[during] is not None:
            return round(max(counts[during] - (counts[idle] or 0), 0) / calls, 4)
    return None


def _with_background(counts: dict[str, Any]) -> float | None:
    """Every round trip of the measured window over its calls: an upper bound (the background ticks included)."""
    during = counts["store_round_trips"] if counts["store_round_trips"] is not None else counts["redis_commands"]
    return None if during is None else round(during / counts["replica_calls"], 4)


def run_cluster_bench(
    *,
    calls: int = 1000,
    warmup: int = 50,
    clients: int = 8,
    throughput_calls: int = 1200,
    rounds: int = 3,
    redis: bool | None = None,
    progress: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """Start the cluster (Redis when `redis`, or when installed if None), measure, stop; the JSON report."""
    notes = [TWO_CORE_NOTE]
    binary("haproxy", "haproxy")
    if redis is None:
        try:
            binary("redis-server", "redis-server")
            redis = True
        except MissingBinary as missing:
            redis = False
            notes.append(f"no Redis: {missing}")
    with tempfile.TemporaryDirectory(prefix="nexus-bench-cluster-") as tmp, ExitStack() as stack:
        folder = Path(tmp)
        progress("starting Redis, three replicas and HAProxy")
        cluster = stack.enter_context(running_cluster(folder, _servers, replicas=3, redis=redis))
        progress("starting the single gateway (files in its state directory) and HAProxy over 1 and 2 replicas")
        single_process, single = start_http(replica_config(folder / "single", _servers("single")))
        stack.callback(stop, single_process)
        balancers = {"3": cluster.url}
        servers = [replica.url.removeprefix("http://") for replica in cluster.replicas]
        for count in (1, 2):
            process, url, _ = start_haproxy(folder, servers[:count])
            stack.callback(stop, process)
            balancers[str(count)] = url
        # HAProxy's checks have seen every replica up (the cluster waits for it; these two follow within a check)
        time.sleep(1.0)
        progress(f"measuring: {calls} calls per path and era, then {throughput_calls} calls per replica count")
        result = anyio.run(
            lambda: _measure(
                cluster,
                single,
                dict(sorted(balancers.items())),
                calls=calls,
                warmup=warmup,
                clients=clients,
                throughput_calls=throughput_calls,
                rounds=rounds,
            )
        )
    if result["redis_round_trips_per_call"] is None:
        notes.append("Redis round trips could not be counted (no Redis, and no store counter on the replicas)")
    elif result["redis"]["modern"]["store_round_trips"] is None:
        notes.append("the replicas keep no store counter: round trips counted as Redis commands less idle ones")
    return {
        **result,
        "replicas": 3,
        "clients": clients,
        "throughput_calls": throughput_calls,
        "rounds": rounds,
        "redis_used": redis,
        "notes": notes,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
    }
