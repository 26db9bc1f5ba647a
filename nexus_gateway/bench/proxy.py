"""What a proxy adds to tools/call: nexus-gateway and its peers (peers.py) against the upstream called directly.

Every proxy fronts the same echo upstream over stdio and is called with the official client. Phases:

- cold start: from launching the proxy to the answer of its first tools/list, then its RSS (the proxy process
  alone, the upstream not counted); `cold_starts` times each, round-robin, the median reported;
- latency: `rounds` rounds; each round visits every path (direct stdio first among them, the order rotated each
  round) for `calls` sequential calls, so every path sees the same machine load (`interleave="calls"`: one call
  on each path in turn instead, so that the paths sample the same moments, every call after calls on the others,
  as a host's sporadic calls come). Added latency is a path's
  percentile minus the direct path's. CPU per call: the proxy's process tree (upstreams excluded), user + system;
- throughput: calls/s with 1, 4, 16... concurrent clients (over http each its own session; over stdio, concurrent
  requests on the one session a stdio host has), `throughput_calls` per path and level spread over the same
  `rounds`, the paths again visited in turn.

The top-level keys are nexus-gateway over the first transport asked for (`direct_ms_p50`, `gateway_ms_p50`,
`direct_ms_p99`, `gateway_ms_p99`, `calls`, `overhead_ms_p50`, `transport`); `nexus` and `peers` hold one row per
proxy and transport, `notes` what could not be measured.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.abc
import psutil
from mcp import Client, StdioServerParameters

from nexus_gateway.bench.peers import Missing, Proxy, Transport, nexus, resolve, search_path

UPSTREAM = [sys.executable, str(Path(__file__).resolve().parent / "echo_server.py")]
"""The echo server run as a script: importing it here would configure the SDK's logging in this process."""
Interleave = Literal["rounds", "calls"]
"""How the latency phase alternates the paths: blocks of `calls` calls per path each round, or call by call."""
START_TIMEOUT = 120.0
"""Seconds a proxy may take to start, and any one request to answer."""
CALL = {"text": "ping"}


@dataclass
class Route:
    """One way to reach the echo tool: directly, or through one proxy over one transport."""

    label: str
    proxy: Proxy | None
    client: Client
    tool: str
    process: psutil.Process
    url: str | None = None
    cold_start_s: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)
    samples: list[float] = field(default_factory=list)
    cpu_s: float = 0.0
    calls_per_s: dict[str, float] = field(default_factory=dict)


def _percentile(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    if not ordered:
        return float("nan")
    rank = (len(ordered) - 1) * q / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return (ordered[low] + (ordered[high] - ordered[low]) * (rank - low)) * 1000.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cpu_seconds(process: psutil.Process) -> float:
    """User + system CPU of `process` and its descendants, upstream echo servers excluded."""
    total = 0.0
    try:
        tree = [process, *process.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    for member in tree:
        try:
            if member is not process and UPSTREAM[1] in " ".join(member.cmdline()):
                continue
            times = member.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            continue
    return total


def _echo_tool(names: Sequence[str]) -> str:
    for name in names:
        if name == "echo" or name.endswith("echo"):
            return name
    raise RuntimeError(f"the proxy lists no echo tool (it lists {', '.join(names) or 'nothing'})")


class Bench:
    def __init__(self, stack: AsyncExitStack, config: Path, extra_path: Sequence[str]) -> None:
        self.stack = stack
        self.config = config
        self.extra_path = list(extra_path)
        self._me = psutil.Process()

    def _env(self, proxy: Proxy | None) -> dict[str, str]:
        env = dict(os.environ)
        env["PATH"] = search_path([*([proxy.path] if proxy and proxy.path else []), *self.extra_path])
        return env

    def _argv(self, proxy: Proxy, port: int) -> list[str]:
        return [word.replace("{config}", str(self.config)) for word in proxy.argv(UPSTREAM, port)]

    async def start(self, proxy: Proxy | None) -> Route:
        label = "direct" if proxy is None else f"{proxy.name} ({proxy.transport})"
        if proxy is None or proxy.transport == "stdio":
            return await self._start_stdio(label, proxy)
        return await self._start_http(label, proxy)

    async def _start_stdio(self, label: str, proxy: Proxy | None) -> Route:
        argv = UPSTREAM if proxy is None else self._argv(proxy, 0)
        before = {child.pid for child in self._me.children()}
        started = time.perf_counter()
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=self._env(proxy))
        client = await self.stack.enter_async_context(_client(params))
        listed = await client.list_tools()
        cold = time.perf_counter() - started
        spawned = [child for child in self._me.children() if child.pid not in before]
        if len(spawned) != 1:
            raise RuntimeError(f"{label}: expected one new process, found {len(spawned)}")
        path = Route(label, proxy, client, _echo_tool([tool.name for tool in listed.tools]), spawned[0])
        path.cold_start_s.append(cold)
        path.rss_mb.append(spawned[0].memory_info().rss / 2**20)
        return path

    async def _start_http(self, label: str, proxy: Proxy) -> Route:
        port = _free_port()
        started = time.perf_counter()
        process = await anyio.open_process(
            self._argv(proxy, port),
            env=self._env(proxy),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.stack.push_async_callback(_stop, process)
        url = f"http://127.0.0.1:{port}/mcp"
        while True:
            if process.returncode is not None:
                raise RuntimeError(f"{label} exited with status {process.returncode} before it served {url}")
            if await _accepts(port):
                break
            if time.perf_counter() - started > START_TIMEOUT:
                raise RuntimeError(f"{label} did not listen on {url} within {START_TIMEOUT:g}s")
            await anyio.sleep(0.01)
        client = await self.stack.enter_async_context(_client(url))
        listed = await client.list_tools()
        cold = time.perf_counter() - started
        measured = psutil.Process(process.pid)
        path = Route(label, proxy, client, _echo_tool([tool.name for tool in listed.tools]), measured, url)
        path.cold_start_s.append(cold)
        path.rss_mb.append(measured.memory_info().rss / 2**20)
        return path


def _client(target: StdioServerParameters | str) -> Client:
    """A legacy-era client whose every request (initialize too) is bounded by START_TIMEOUT."""
    return Client(target, mode="legacy", cache=None, read_timeout_seconds=START_TIMEOUT)


async def _accepts(port: int) -> bool:
    try:
        stream = await anyio.connect_tcp("127.0.0.1", port)
    except OSError:
        return False
    await stream.aclose()
    return True


async def _stop(process: anyio.abc.Process) -> None:
    process.terminate()
    with anyio.move_on_after(10):
        await process.wait()
        return
    process.kill()
    await process.wait()


async def _call(client: Client, tool: str) -> float:
    started = time.perf_counter()
    result = await client.call_tool(tool, CALL)
    elapsed = time.perf_counter() - started
    if result.is_error:
        raise RuntimeError(f"benchmark call to {tool} failed: {result.content}")
    return elapsed


async def _cold_starts(bench: Bench, paths: list[Route], repeats: int) -> None:
    """`repeats` more cold starts of every proxy, round-robin; each instance is stopped once it has listed."""
    proxied = [path for path in paths if path.proxy is not None]
    for repeat in range(repeats):
        shift = repeat % max(len(proxied), 1)
        for path in proxied[shift:] + proxied[:shift]:
            assert path.proxy is not None
            async with AsyncExitStack() as stack:
                fresh = await Bench(stack, bench.config, bench.extra_path).start(path.proxy)
            path.cold_start_s.extend(fresh.cold_start_s)
            path.rss_mb.extend(fresh.rss_mb)


async def _latency(paths: list[Route], rounds: int, calls: int, warmup: int, interleave: Interleave = "rounds") -> None:
    for path in paths:
        for _ in range(warmup):
            await _call(path.client, path.tool)
    for round_ in range(rounds):
        shift = round_ % len(paths)
        order = paths[shift:] + paths[:shift]
        if interleave == "rounds":
            for path in order:
                cpu = _cpu_seconds(path.process)
                for _ in range(calls):
                    path.samples.append(await _call(path.client, path.tool))
                path.cpu_s += _cpu_seconds(path.process) - cpu
            continue
        # "calls": one call on each path in turn, so every path's calls sample the same moments; a proxy's CPU
        # is counted over the round (it idles while the others are called).
        cpu_before = [_cpu_seconds(path.process) for path in order]
        for _ in range(calls):
            for path in order:
                path.samples.append(await _call(path.client, path.tool))
        for path, before in zip(order, cpu_before, strict=True):
            path.cpu_s += _cpu_seconds(path.process) - before


async def _throughput(
    stack: AsyncExitStack, paths: list[Route], levels: Sequence[int], calls: int, rounds: int = 1
) -> None:
    """calls/s with each level of concurrent clients: about `calls` calls per path at each level, spread over
    `rounds` rounds that visit every path in turn (the order rotated each round), so that a burst of load on
    the machine falls on every path alike; a path's calls/s is all its calls over all its time."""
    extra: dict[str, list[Client]] = {path.label: [] for path in paths}
    for level in levels:
        clients: dict[str, list[Client]] = {}
        for path in paths:
            clients[path.label] = [path.client] * level
            if path.url is not None:
                sessions = extra[path.label]
                while len(sessions) < level - 1:
                    sessions.append(await stack.enter_async_context(_client(path.url)))
                clients[path.label] = [path.client, *sessions[: level - 1]]
        share = max(1, calls // (level * rounds))  # calls per client per round
        elapsed = dict.fromkeys(clients, 0.0)
        for round_ in range(rounds):
            shift = round_ % len(paths)
            for path in paths[shift:] + paths[:shift]:
                elapsed[path.label] += await _burst(clients[path.label], path.tool, share)
        for path in paths:
            path.calls_per_s[str(level)] = round(share * level * rounds / elapsed[path.label], 1)


async def _burst(clients: list[Client], tool: str, share: int) -> float:
    """Seconds for every client to make `share` sequential calls, all clients at once."""

    async def worker(client: Client) -> None:
        for _ in range(share):
            await _call(client, tool)

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for client in clients:
            tg.start_soon(worker, client)
    return time.perf_counter() - started


def _row(path: Route, direct: Route, calls_total: int) -> dict[str, Any]:
    assert path.proxy is not None
    p50, p99 = _percentile(path.samples, 50), _percentile(path.samples, 99)
    d50, d99 = _percentile(direct.samples, 50), _percentile(direct.samples, 99)
    return {
        "name": path.proxy.name,
        "transport": path.proxy.transport,
        "ms_p50": round(p50, 4),
        "ms_p99": round(p99, 4),
        "added_ms_p50": round(p50 - d50, 4),
        "added_ms_p99": round(p99 - d99, 4),
        "cpu_ms_per_call": round(path.cpu_s * 1000.0 / max(calls_total, 1), 4),
        "calls_per_s": path.calls_per_s,
        "cold_start_s": round(statistics.median(path.cold_start_s), 3),
        "cold_start_s_samples": [round(value, 3) for value in path.cold_start_s],
        "rss_mb": round(statistics.median(path.rss_mb), 1),
    }


async def run_proxy_bench(
    *,
    transports: Sequence[Transport] = ("stdio",),
    peers: Sequence[str] = (),
    rounds: int = 10,
    calls: int = 100,
    warmup: int = 20,
    concurrency: Sequence[int] = (1, 4, 16),
    throughput_calls: int = 320,
    cold_starts: int = 3,
    extra_path: Sequence[str] = (),
    interleave: Interleave = "rounds",
) -> dict[str, Any]:
    proxies: list[Proxy] = [nexus(transport) for transport in transports]
    notes: list[str] = []
    for spec in peers:
        for found in resolve(spec, transports, extra_path):
            if isinstance(found, Missing):
                notes.append(f"{found.name}: {found.why}")
            else:
                proxies.append(found)
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "bench.json"
        servers = {"echo": {"command": UPSTREAM[0], "args": UPSTREAM[1:]}}
        config.write_text(json.dumps({"mcpServers": servers, "nexus": {"mode": "passthrough", "state_dir": tmp}}))
        async with AsyncExitStack() as stack:
            bench = Bench(stack, config, extra_path)
            direct = await bench.start(None)
            paths = [direct]
            for proxy in proxies:
                try:
                    paths.append(await bench.start(proxy))
                except Exception as exc:  # boundary: a peer that fails to start is a note, not the end of the run
                    if proxy.name == "nexus-gateway":
                        raise
                    notes.append(f"{proxy.name} ({proxy.transport}): did not start: {exc}")
            await _cold_starts(bench, paths, cold_starts - 1)
            await _latency(paths, rounds, calls, warmup, interleave)
            await _throughput(stack, paths, concurrency, throughput_calls, rounds)
    measured = rounds * calls
    rows = [_row(path, direct, measured) for path in paths[1:]]
    ours = [row for row in rows if row["name"] == "nexus-gateway"]
    first = ours[0]
    direct_p50, direct_p99 = _percentile(direct.samples, 50), _percentile(direct.samples, 99)
    return {
        "direct_ms_p50": round(direct_p50, 4),
        "gateway_ms_p50": first["ms_p50"],
        "direct_ms_p99": round(direct_p99, 4),
        "gateway_ms_p99": first["ms_p99"],
        "calls": measured,
        "overhead_ms_p50": first["added_ms_p50"],
        "transport": first["transport"],
        "rounds": rounds,
        "calls_per_round": calls,
        "interleave": interleave,
        "direct": {
            "ms_p50": round(direct_p50, 4),
            "ms_p99": round(direct_p99, 4),
            "ms_mean": round(statistics.fmean(direct.samples) * 1000.0, 4),
            "calls_per_s": direct.calls_per_s,
        },
        "nexus": ours,
        "peers": [row for row in rows if row["name"] != "nexus-gateway"],
        "notes": notes,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
    }


def run(**options: Any) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        return await run_proxy_bench(**options)

    return anyio.run(main)


def markdown_table(report: dict[str, Any]) -> str:
    """The README's speed table: one line per proxy and transport, nexus-gateway first."""
    levels = sorted({level for row in [*report["nexus"], *report["peers"]] for level in row["calls_per_s"]}, key=int)
    head = (
        "| proxy | host -> proxy | added p50 / p99 vs direct stdio (ms) | proxy CPU / call (ms) | "
        f"calls/s at {' / '.join(levels)} clients | cold start to first tools/list (s) | RSS (MB) |"
    )
    lines = [head, "|---|---|---|---|---|---|---|"]
    for row in [*report["nexus"], *report["peers"]]:
        rates = " / ".join(f"{row['calls_per_s'].get(level, 0):.0f}" for level in levels)
        lines.append(
            f"| {row['name']} | {row['transport']} | {row['added_ms_p50']:.2f} / {row['added_ms_p99']:.2f} | "
            f"{row['cpu_ms_per_call']:.2f} | {rates} | {row['cold_start_s']:.2f} | {row['rss_mb']:.0f} |"
        )
    return "\n".join(lines)
