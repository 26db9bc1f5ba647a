"""The 44-server real catalog: which servers answer tools/list directly, and how the gateway starts with them.

    REAL_SERVERS=DIR scripts/real_catalog.py [--config real-servers.json] [--runs passthrough-cold,...]

1. Direct probe (the expected set): each server launched on its own with the official `mcp` client
   (handshake era, stdio, the entry's env over this environment), tools/list, a few at a time.
2. Gateway runs: `nexus-gateway serve --transport http` with the catalog, in passthrough and routed mode, cold (empty
   state dir) and warm (the state dir the cold run left). /healthz is polled every second until every expected
   server is healthy (or --wait runs out): wall time to healthy, healthy vs expected, RSS of the gateway and of its
   children, then tools/list over /mcp, and for each expected server that is not healthy, its state and log lines.
Writes docs/results/real-catalog.json. The time to healthy here is not comparable with the direct probe (one server
at a time, a few at once); `nexus-gateway bench startup CONFIG` compares the gateway's start with every server
started directly and all at once, in interleaved rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _verify import PYTHON, REPO, free_port, gateway_env, git_commit, healthz, log, start, stop, tree_rss_kib

DEFAULT_CONFIG = (
    Path(os.environ.get("REAL_SERVERS_DATA") or REPO.parent / "shared" / "data" / "dev" / "real_servers")
    / "real-servers.json"
)
"""The workspace's 44-server catalog beside this repository, or in $REAL_SERVERS_DATA."""


async def probe_one(name: str, spec: Any, timeout: float) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters

    began = time.monotonic()
    params = StdioServerParameters(
        command=spec.command, args=list(spec.args), env={**os.environ, **spec.env}, cwd=spec.cwd
    )
    try:
        with anyio.fail_after(timeout):
            async with Client(params, mode="legacy", cache=None) as client:
                tools = await client.list_tools()
        return {"ok": True, "tools": len(tools.tools), "seconds": round(time.monotonic() - began, 1)}
    except BaseException as exc:  # anything the server or the client does is a result here
        if isinstance(exc, KeyboardInterrupt):
            raise
        message = _describe(exc)
        return {"ok": False, "error": message[:400], "seconds": round(time.monotonic() - began, 1)}


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


async def probe_all(servers: dict[str, Any], *, timeout: float, parallel: int) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    limiter = anyio.CapacityLimiter(parallel)

    async def one(name: str, spec: Any) -> None:
        async with limiter:
            results[name] = await probe_one(name, spec, timeout)
            outcome = results[name]
            what = f"{outcome['tools']} tools" if outcome["ok"] else outcome["error"]
            log(f"direct {name}: {what} ({outcome['seconds']} s)")

    async with anyio.create_task_group() as group:
        for name, spec in servers.items():
            group.start_soon(one, name, spec)
    return results


async def list_over_mcp(port: int) -> dict[str, Any]:
    from mcp import Client

    began = time.monotonic()
    try:
        with anyio.fail_after(120):
            async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy", cache=None) as client:
                names: list[str] = []
                cursor: str | None = None
                pages = 0
                while True:
                    page = await client.list_tools(cursor=cursor)
                    names += [tool.name for tool in page.tools]
                    pages += 1
                    cursor = page.next_cursor
                    if not cursor:
                        break
        return {"ok": True, "tools": len(names), "pages": pages, "seconds": round(time.monotonic() - began, 1)}
    except Exception as exc:
        return {"ok": False, "error": _describe(exc)[:400]}


def gateway_run(
    config: Path,
    mode: str,
    state: Path,
    expected: set[str],
    *,
    wait: float,
    work: Path,
    label: str,
    env: dict[str, str],
) -> dict[str, Any]:
    port = free_port()
    log_path = work / f"gateway-{label}.log"
    began = time.monotonic()
    proc = start(
        [
            PYTHON,
            "-m",
            "nexus_gateway",
            "serve",
            "--config",
            str(config),
            "--transport",
            "http",
            "--mode",
            mode,
            "--port",
            str(port),
        ],
        log_path=log_path,
        env=gateway_env({**env, "NEXUS_STATE_DIR": str(state)}),
        cwd=REPO,
    )
    timeline: list[dict[str, Any]] = []
    healthy_at: float | None = None
    first_answer: float | None = None
    body: dict[str, Any] | None = None
    peak = (0, 0)
    try:
        while time.monotonic() - began < wait and proc.poll() is None:
            body = healthz(port)
            now = time.monotonic() - began
            own, children, _ = tree_rss_kib(proc.pid)
            peak = (max(peak[0], own), max(peak[1], children))
            if body is not None:
                first_answer = first_answer if first_answer is not None else now
                states = body.get("upstreams", {})
                n_ok = sum(1 for name in expected if states.get(name) == "healthy")
                if not timeline or timeline[-1]["healthy"] != n_ok:
                    timeline.append({"t": round(now, 1), "healthy": n_ok})
                if n_ok == len(expected):
                    healthy_at = now
                    break
            time.sleep(1.0)
        own, children, n_children = tree_rss_kib(proc.pid)
        listed = anyio.run(list_over_mcp, port) if proc.poll() is None else {"ok": False, "error": "gateway exited"}
        final = healthz(port) or body or {}
    finally:
        stop(proc, grace=20)
    states = final.get("upstreams", {})
    log_text = log_path.read_text(errors="replace") if log_path.exists() else ""
    failing = {
        name: {"state": states.get(name, "absent"), "log": _log_lines(log_text, name)}
        for name in sorted(expected)
        if states.get(name) != "healthy"
    }
    unexpected_healthy = sorted(name for name, state in states.items() if state == "healthy" and name not in expected)
    return {
        "mode": mode,
        "state": label.rsplit("-", 1)[1],
        "seconds_to_all_expected_healthy": None if healthy_at is None else round(healthy_at, 1),
        "seconds_to_first_healthz": None if first_answer is None else round(first_answer, 1),
        "waited": round(time.monotonic() - began, 1),
        "healthy_expected": sum(1 for name in expected if states.get(name) == "healthy"),
        "expected": len(expected),
        "healthy_total": sum(1 for state in states.values() if state == "healthy"),
        "tools_in_catalog": final.get("tools"),
        "rss_mib": {
            "gateway": round(own / 1024),
            "children": round(children / 1024),
            "n_children": n_children,
            "peak_gateway": round(peak[0] / 1024),
            "peak_children": round(peak[1] / 1024),
        },
        "tools_list_over_mcp": listed,
        "timeline": timeline,
        "failing_expected": failing,
        "healthy_but_not_expected": unexpected_healthy,
        "load_average_after": os.getloadavg(),
        "log_warnings": sum(1 for line in log_text.splitlines() if " WARNING " in line or " ERROR " in line),
    }


def _log_lines(text: str, name: str, limit: int = 3) -> list[str]:
    pattern = re.compile(rf"\b(upstream|server) '?{re.escape(name)}'?\b")
    hits = [line for line in text.splitlines() if pattern.search(line) and (" WARNING " in line or " ERROR " in line)]
    return [line[:300] for line in dict.fromkeys(hits)][-limit:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    parser.add_argument("--runs", default="passthrough-cold,passthrough-warm,routed-cold,routed-warm")
    parser.add_argument("--wait", type=float, default=240, help="seconds to wait for every expected server")
    parser.add_argument("--probe-timeout", type=float, default=120)
    parser.add_argument("--parallel", type=int, default=4, help="direct probes at once")
    parser.add_argument("--expected", type=Path, default=None, help="reuse a direct probe (a previous JSON)")
    parser.add_argument("--json", type=Path, default=REPO / "docs/results/real-catalog.json")
    parser.add_argument("--start-timeout", type=float, default=None, help="NEXUS_START_TIMEOUT for the gateway")
    args = parser.parse_args()
    if not os.environ.get("REAL_SERVERS"):
        parser.error("set REAL_SERVERS to the folder install.sh filled")

    sys.path.insert(0, str(REPO))
    from nexus_gateway.config import load_config

    config = load_config(args.config)
    servers = {name: spec for name, spec in config.servers.items() if not spec.disabled}
    work = Path(tempfile.mkdtemp(prefix="nexus-real-catalog-"))
    document: dict[str, Any] = {
        "gateway_commit": git_commit(),
        "date": time.strftime("%Y-%m-%d"),
        "config": str(args.config),
        "servers": len(servers),
        "cpus": os.cpu_count(),
        "load_average_at_start": os.getloadavg(),
        "start_timeout": args.start_timeout or config.nexus.start_timeout,
    }
    extra_env = {"NEXUS_START_TIMEOUT": str(args.start_timeout)} if args.start_timeout else {}
    if args.expected:
        direct = json.loads(args.expected.read_text())["direct"]
    else:
        log(f"probing {len(servers)} servers directly, {args.parallel} at a time")
        direct = anyio.run(lambda: probe_all(servers, timeout=args.probe_timeout, parallel=args.parallel))
    document["direct"] = dict(sorted(direct.items()))
    expected = {name for name, outcome in direct.items() if outcome["ok"]}
    document["expected"] = sorted(expected)
    document["expected_tools"] = sum(direct[name]["tools"] for name in expected)
    log(f"expected set: {len(expected)} of {len(servers)} servers, {document['expected_tools']} tools")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(document, indent=2) + "\n")

    states = {"passthrough": work / "state-passthrough", "routed": work / "state-routed"}
    document["runs"] = {}
    for label in [run for run in args.runs.split(",") if run]:
        mode, temperature = label.split("-")
        if temperature == "cold":
            states[mode] = work / f"state-{label}"
        log(f"gateway {label} (state {states[mode]})")
        result = gateway_run(
            args.config, mode, states[mode], expected, wait=args.wait, work=work, label=label, env=extra_env
        )
        document["runs"][label] = result
        log(
            f"{label}: all expected healthy after {result['seconds_to_all_expected_healthy']} s; "
            f"{result['healthy_expected']}/{result['expected']} healthy; RSS gateway {result['rss_mib']['gateway']} "
            f"MiB + children {result['rss_mib']['children']} MiB; tools/list: {result['tools_list_over_mcp']}"
        )
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    _print_table(document)
    log("wrote", args.json, "; logs in", work)
    return 0


def _print_table(document: dict[str, Any]) -> None:
    print(
        f"expected (answer tools/list directly): {len(document['expected'])} of {document['servers']}, "
        f"{document['expected_tools']} tools"
    )
    for name, outcome in document["direct"].items():
        if not outcome["ok"]:
            print(f"  direct failure {name}: {outcome['error'][:160]}")
    print(f"\n{'run':<18} {'to healthy':>10} {'healthy':>9} {'RSS gw':>7} {'RSS kids':>8}  tools/list over /mcp")
    for label, run in document.get("runs", {}).items():
        seconds = run["seconds_to_all_expected_healthy"]
        listed = run["tools_list_over_mcp"]
        listing = f"{listed['tools']} tools" if listed.get("ok") else listed.get("error", "")[:80]
        print(
            f"{label:<18} {'-' if seconds is None else f'{seconds} s':>10} "
            f"{run['healthy_expected']:>4}/{run['expected']:<4} {run['rss_mib']['gateway']:>5}M "
            f"{run['rss_mib']['children']:>7}M  {listing}"
        )
        for name, failure in run["failing_expected"].items():
            print(f"    {name}: {failure['state']}; {' | '.join(failure['log'])[:200]}")


if __name__ == "__main__":
    raise SystemExit(main())
