"""Memory of N hosts: N `serve` processes (each with its own upstreams) against N shims through one daemon.

    python -m nexus_gateway.bench.hosts_rss CONFIG [--hosts 3]

Each host is the official MCP client over stdio, connected and having listed its tools (so every upstream is
up). RSS is summed over the process trees: each `serve` and everything under it; the shims, the daemon and
everything under the daemon. Set `NEXUS_STATE_DIR` to a short folder (the daemon's socket path is limited to
107 bytes); the daemon is stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import psutil
from mcp import Client, StdioServerParameters


def _tree_rss(root: psutil.Process) -> tuple[int, int]:
    """(bytes, processes) of `root` and its descendants."""
    tree = [root, *root.children(recursive=True)]
    return sum(process.memory_info().rss for process in tree), len(tree)


def _launched(command: str) -> list[psutil.Process]:
    return [child for child in psutil.Process().children() if command in child.cmdline()]


async def _hosts(config: Path, command: str, hosts: int) -> dict[str, float]:
    args = ["-m", "nexus_gateway", command, "--config", str(config)]
    params = StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))
    with anyio.fail_after(300):
        async with AsyncExitStack() as stack:
            for _ in range(hosts):
                client = await stack.enter_async_context(Client(params, mode="legacy", cache=None))
                await client.list_tools()
            measured = _measure(config, command)
    return measured


def _measure(config: Path, command: str) -> dict[str, float]:
    roots = _launched(command)
    fronts = sum(root.memory_info().rss for root in roots)
    total, count = 0, 0
    for root in roots:
        rss, processes = _tree_rss(root) if command == "serve" else (root.memory_info().rss, 1)
        total, count = total + rss, count + processes
    if command == "connect":  # the shim that started the daemon is its parent: counted once, here
        daemon = next(
            p
            for p in psutil.process_iter(["cmdline"])
            if "daemon" in (p.info["cmdline"] or []) and str(config) in (p.info["cmdline"] or [])
        )
        rss, processes = _tree_rss(daemon)
        total, count = total + rss, count + processes
    return {
        "rss_mib": round(total / 2**20, 1),
        "processes": count,
        "fronts": len(roots),
        "fronts_rss_mib": round(fronts / 2**20, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("config", type=Path)
    parser.add_argument("--hosts", type=int, default=3)
    args = parser.parse_args()
    config = args.config.resolve()
    serve = anyio.run(_hosts, config, "serve", args.hosts)
    try:
        shared = anyio.run(_hosts, config, "connect", args.hosts)
    finally:
        subprocess.run([sys.executable, "-m", "nexus_gateway", "daemon", "stop", "--config", str(config)], check=False)
    print(json.dumps({"hosts": args.hosts, "serve": serve, "daemon": shared}, indent=1))


if __name__ == "__main__":
    main()
