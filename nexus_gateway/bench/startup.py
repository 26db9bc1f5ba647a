"""`bench startup CONFIG`: the gateway's start against the same servers started directly, all at once.

Two kinds of run over one config, interleaved (`rounds` rounds; each round runs every kind once, the order rotated
each round, so every kind sees the same machine load):

- direct: every stdio server of the config launched at the same time by the official `mcp.Client` (handshake era,
  the environment the gateway would give it: `environment.upstream_environment`), no gateway. Per server: seconds to
  its tools/list answer (every page), then to its other lists (resources, templates, prompts, those it declares: what
  the gateway lists before it calls a server healthy); then seconds until all have answered tools/list, and until
  all have answered every list. Each server stays up until all have answered, as under the gateway;
- gateway (one per mode, passthrough and routed): `nexus-gateway serve --transport http --port 0`, with one state dir
  per mode kept across rounds (`state="kept"`: a gateway its host restarts, so from the second round it knows how
  long each server took and starts the slowest first, `start_order.py`) or a fresh one per run (`"fresh"`: every
  run a first start). From its launch: when it listens, when each upstream is first healthy and when all are
  (`/healthz`, polled), when its first tools/list over `/mcp` is answered, when the index covers the catalog
  (`/healthz` `index`), how many restarts its log reports, and the peak RSS of the gateway and of its children.

The "constant" is a round's gateway all-healthy minus the same round's direct all-answered; the summary gives
each mode's constants and ratios over the rounds, and their medians.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Literal, TextIO

import anyio
import anyio.abc
import httpx
import psutil
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from nexus_gateway.config import GatewayConfig, StdioServer, load_config
from nexus_gateway.upstreams.environment import upstream_environment

_LISTENING = re.compile(r"listening on (http://\S+)")
_RESTART = re.compile(r"upstream (\S+) is unavailable \((.*)\); reconnecting")
MODES = ("passthrough", "routed")


async def direct(config: GatewayConfig, *, timeout: float, errlog: TextIO) -> dict[str, Any]:
    """Every stdio server of `config` started at once with the official client; times from the launch. The
    servers' stderr goes to `errlog`."""
    servers = {name: spec for name, spec in config.enabled_servers.items() if isinstance(spec, StdioServer)}
    inherit = config.nexus.inherit_env
    outcomes: dict[str, dict[str, Any]] = {}
    everyone_answered = anyio.Event()
    began, cpu = time.monotonic(), _cpu_seconds(psutil.Process())

    def settled(name: str, outcome: dict[str, Any]) -> None:
        outcomes[name] = outcome
        if len(outcomes) == len(servers):
            everyone_answered.set()

    async def one(name: str, spec: StdioServer) -> None:
        env = upstream_environment(spec.env, inherit=inherit)
        params = StdioServerParameters(command=spec.command, args=list(spec.args), env=env, cwd=spec.cwd)
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + timeout) as scope:
                async with Client(stdio_client(params, errlog=errlog), mode="legacy", cache=None) as client:
                    tools = await _all_tools(client)
                    settled(name, {"ok": True, "tools": tools, "seconds": round(time.monotonic() - began, 2)})
                    await _optional_lists(client)  # what the gateway lists too before it calls a server healthy
                    outcomes[name]["all_lists_seconds"] = round(time.monotonic() - began, 2)
                    scope.deadline = float("inf")
                    await everyone_answered.wait()  # up until every server has answered, as under a gateway
            if scope.cancelled_caught and name not in outcomes:
                settled(name, {"ok": False, "error": "timed out", "seconds": round(time.monotonic() - began, 2)})
        except Exception as exc:  # whatever one server does is its result
            if name not in outcomes:
                error = _describe(exc)[:300]
                settled(name, {"ok": False, "error": error, "seconds": round(time.monotonic() - began, 2)})

    async with anyio.create_task_group() as group:
        for name, spec in servers.items():
            group.start_soon(one, name, spec)
    answered = [outcome["seconds"] for outcome in outcomes.values() if outcome["ok"]]
    listed = [outcome["all_lists_seconds"] for outcome in outcomes.values() if "all_lists_seconds" in outcome]
    client_cpu = round(_cpu_seconds(psutil.Process()) - cpu, 1)
    return {
        "kind": "direct",
        "servers": dict(sorted(outcomes.items())),
        "answered": len(answered),
        "of": len(servers),
        "seconds_to_all_answered": max(answered) if answered else None,
        "seconds_to_all_listed": max(listed) if listed else None,
        "client_cpu_s": client_cpu,
        "load_average_after": os.getloadavg(),
    }


async def _optional_lists(client: Client) -> None:
    """resources/list, resources/templates/list and prompts/list, those the server declares, as the gateway does
    (a failure is ignored, as the gateway serves that list empty)."""
    capabilities = client.server_capabilities
    fetches = [client.list_resources, client.list_resource_templates] if capabilities.resources else []
    fetches += [client.list_prompts] if capabilities.prompts else []
    for fetch in fetches:
        with contextlib.suppress(MCPError):
            await fetch()


async def _all_tools(client: Client) -> int:
    count, cursor = 0, None
    for _ in range(50):
        page = await client.list_tools(cursor=cursor)
        count += len(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return count


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(dict.fromkeys(_describe(inner) for inner in exc.exceptions))
    return f"{type(exc).__name__}: {exc}"


async def gateway(
    config_path: Path,
    mode: str,
    expected: set[str],
    *,
    timeout: float,
    poll: float,
    env: dict[str, str],
    log: Path,
    state: str | None = None,
) -> dict[str, Any]:
    """One gateway start with `state` as its state dir (a fresh one when None); times from the launch of its
    process. Its log goes to `log`."""
    state = state or tempfile.mkdtemp(prefix="nexus-bench-startup-")
    command = [sys.executable, "-m", "nexus_gateway", "serve", "--config", str(config_path), "--transport", "http"]
    command += ["--port", "0", "--mode", mode, "--no-watch", "--log-level", "info"]
    began = time.monotonic()
    process = await anyio.open_process(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, **env, "NEXUS_STATE_DIR": state},
        start_new_session=True,
    )
    lines: list[str] = []
    marks: dict[str, float] = {}
    healthy_at: dict[str, float] = {}
    listening = anyio.Event()
    url = ""
    timeline: list[tuple[float, int]] = []
    peak = {"gateway_mib": 0.0, "children_mib": 0.0}
    last: dict[str, Any] = {}

    def now() -> float:
        return round(time.monotonic() - began, 2)

    async def read_log() -> None:
        nonlocal url
        assert process.stderr is not None
        pending = b""
        async for chunk in process.stderr:
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for raw in complete:
                line = raw.decode(errors="replace")
                lines.append(line)
                if not listening.is_set() and (match := _LISTENING.search(line)):
                    url = match.group(1)
                    marks["listening"] = now()
                    listening.set()

    async def list_tools() -> None:
        await listening.wait()
        try:
            async with Client(f"{url}/mcp", mode="legacy", cache=None) as client:
                await client.list_tools()
                marks["first_tools_list"] = now()
        except Exception as exc:  # recorded, not raised: the run goes on
            marks["first_tools_list_error"] = now()
            lines.append(f"bench: tools/list failed: {_describe(exc)}")

    async def watch_health() -> None:
        nonlocal last
        await listening.wait()
        async with httpx.AsyncClient(timeout=5.0) as http:
            while True:
                try:
                    last = (await http.get(f"{url}/healthz")).json()
                except (httpx.HTTPError, ValueError):
                    await anyio.sleep(poll)
                    continue
                moment = now()
                states = last.get("upstreams", {})
                for name, state in states.items():
                    if state == "healthy" and name not in healthy_at:
                        healthy_at[name] = moment
                count = sum(1 for name in expected if states.get(name) == "healthy")
                if not timeline or timeline[-1][1] != count:
                    timeline.append((moment, count))
                if count == len(expected) and "all_healthy" not in marks:
                    marks["all_healthy"] = moment
                    with contextlib.suppress(psutil.Error):
                        marks["gateway_cpu_s"] = round(_cpu_seconds(psutil.Process(process.pid)), 1)
                index = last.get("index", {})
                if index.get("current") and index.get("searchable", 0) >= last.get("tools", 1) > 0:
                    marks.setdefault("index_ready", moment)
                _sample_rss(process.pid, peak)
                done = "all_healthy" in marks and ("first_tools_list" in marks or "first_tools_list_error" in marks)
                if done and (mode != "routed" or "index_ready" in marks):
                    return
                await anyio.sleep(poll)

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(read_log)
            with anyio.move_on_after(timeout):
                async with anyio.create_task_group() as watched:
                    watched.start_soon(list_tools)
                    watched.start_soon(watch_health)
            group.cancel_scope.cancel()
    finally:
        await _stop(process)
        await anyio.Path(log).write_text("\n".join(lines) + "\n")
    restarts: dict[str, list[str]] = {}
    for line in lines:
        if match := _RESTART.search(line):
            restarts.setdefault(match.group(1), []).append(match.group(2)[:120])
    states = last.get("upstreams", {})
    return {
        "kind": f"gateway-{mode}",
        "mode": mode,
        "seconds_to_listening": marks.get("listening"),
        "seconds_to_all_healthy": marks.get("all_healthy"),
        "seconds_to_first_tools_list": marks.get("first_tools_list"),
        "seconds_to_index_ready": marks.get("index_ready"),
        "gateway_cpu_s_at_all_healthy": marks.get("gateway_cpu_s"),
        "healthy": sum(1 for name in expected if states.get(name) == "healthy"),
        "of": len(expected),
        "not_healthy": {name: states.get(name, "absent") for name in sorted(expected) if states.get(name) != "healthy"},
        "upstream_healthy_at": dict(sorted(healthy_at.items())),
        "restarts": restarts,
        "index": last.get("index"),
        "tools": last.get("tools"),
        "timeline": timeline,
        "peak_rss_mib": {key: round(value) for key, value in peak.items()},
        "log_warnings": sum(1 for line in lines if " WARNING " in line or " ERROR " in line),
        "log": str(log),
        "load_average_after": os.getloadavg(),
    }


def _cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def _sample_rss(pid: int, peak: dict[str, float]) -> None:
    try:
        parent = psutil.Process(pid)
        own = parent.memory_info().rss
        children = 0
        for child in parent.children(recursive=True):
            try:
                children += child.memory_info().rss
            except psutil.Error:
                continue
    except psutil.Error:
        return
    peak["gateway_mib"] = max(peak["gateway_mib"], own / 2**20)
    peak["children_mib"] = max(peak["children_mib"], children / 2**20)


async def _stop(process: anyio.abc.Process) -> None:
    """SIGTERM the gateway's process group (it closes its upstreams), SIGKILL whatever is left after 20 s."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with anyio.move_on_after(20):
            await process.wait()
    with contextlib.suppress(ProcessLookupError):  # the group outlives its leader when an upstream ignores SIGTERM
        os.killpg(process.pid, signal.SIGKILL)
    with anyio.move_on_after(5):
        await process.wait()


async def _direct_run(config: GatewayConfig, timeout: float, log: Path) -> dict[str, Any]:
    with log.open("w") as errlog:
        result = await direct(config, timeout=timeout, errlog=errlog)
    return result | {"log": str(log)}


def run(
    config_path: Path,
    *,
    modes: Sequence[str] = MODES,
    rounds: int = 2,
    timeout: float = 240.0,
    poll: float = 0.2,
    env: dict[str, str] | None = None,
    progress: Callable[[dict[str, Any]], None] | None = None,
    json_out: Path | None = None,
    state: Literal["kept", "fresh"] = "kept",
) -> dict[str, Any]:
    """`rounds` interleaved rounds of direct and gateway starts over `config_path`, and their summary (written
    to `json_out` after every run, when given). Logs go to a temporary folder the result names."""
    config = load_config(config_path)
    logs = Path(tempfile.mkdtemp(prefix="nexus-bench-startup-logs-"))
    kept = {mode: str(logs / f"state-{mode}") for mode in modes} if state == "kept" else {}
    kinds = ["direct", *(f"gateway-{mode}" for mode in modes)]
    runs: list[dict[str, Any]] = []
    expected: set[str] = set()
    for round_index in range(rounds):
        order = kinds[round_index % len(kinds) :] + kinds[: round_index % len(kinds)]
        if round_index == 0:
            order = kinds  # the first direct run names the servers the gateway runs are waited for
        for kind in order:
            log = logs / f"{round_index}-{kind}.log"
            if kind == "direct":
                result = anyio.run(_direct_run, config, timeout, log)
                if not expected:
                    expected = {name for name, outcome in result["servers"].items() if outcome["ok"]}
            else:
                mode = kind.removeprefix("gateway-")
                run_one = partial(gateway, timeout=timeout, poll=poll, env=env or {}, log=log, state=kept.get(mode))
                result = anyio.run(run_one, config_path, mode, set(expected))
                result["state"] = state
            result["round"] = round_index
            runs.append(result)
            if progress is not None:
                progress(result)
            document = _document(config_path, config, expected, env, modes, runs, state)
            if json_out is not None:
                json_out.write_text(json.dumps(document, indent=2) + "\n")
    return document


def _document(
    config_path: Path,
    config: GatewayConfig,
    expected: set[str],
    env: dict[str, str] | None,
    modes: Sequence[str],
    runs: list[dict[str, Any]],
    state: str,
) -> dict[str, Any]:
    return {
        "config": str(config_path),
        "servers": len(config.enabled_servers),
        "expected": sorted(expected),
        "cpus": os.cpu_count(),
        "settings": {
            "start_timeout": config.nexus.start_timeout,
            "max_concurrent_starts": config.nexus.max_concurrent_starts,
            "state": state,
            **({"env": env} if env else {}),
        },
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "summary": summarize(runs, modes),
        "runs": runs,
    }


def summarize(runs: Sequence[dict[str, Any]], modes: Sequence[str]) -> dict[str, Any]:
    """Per mode: each round's gateway all-healthy minus that round's direct all-answered, and the ratio."""
    direct_by_round = {run["round"]: run["seconds_to_all_answered"] for run in runs if run["kind"] == "direct"}
    summary: dict[str, Any] = {
        "direct_all_answered_s": list(direct_by_round.values()),
        "direct_all_listed_s": [run.get("seconds_to_all_listed") for run in runs if run["kind"] == "direct"],
    }
    for mode in modes:
        rows = [run for run in runs if run["kind"] == f"gateway-{mode}"]
        constants, ratios = [], []
        for row in rows:
            base, healthy = direct_by_round.get(row["round"]), row["seconds_to_all_healthy"]
            if base and healthy is not None:
                constants.append(round(healthy - base, 2))
                ratios.append(round(healthy / base, 2))
        summary[mode] = {
            "all_healthy_s": [row["seconds_to_all_healthy"] for row in rows],
            "first_tools_list_s": [row["seconds_to_first_tools_list"] for row in rows],
            "index_ready_s": [row["seconds_to_index_ready"] for row in rows],
            "restarts": [sum(len(lines) for lines in row["restarts"].values()) for row in rows],
            "constant_s": constants,
            "ratio": ratios,
            "median_constant_s": statistics.median(constants) if constants else None,
            "median_ratio": statistics.median(ratios) if ratios else None,
        }
    return summary
