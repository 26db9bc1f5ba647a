"""Time to receive one large tool result through the gateway against the same upstream called directly.

Both paths are stdio, and both clients read with the gateway's own stdio transport (the SDK's stdio
client reads a long line in quadratic time and would measure itself). Calls alternate direct /
gateway, so both see the same machine load; the report is the best and median of each, in seconds
and MB/s, and their ratio.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import get_default_environment

from nexus_gateway.upstreams.stdio_client import StdioCommand, stdio_upstream

_BULK = ["-m", "nexus_gateway.bench.bulk_server"]


def _client(args: list[str], cap: int) -> Client:
    command = StdioCommand(command=sys.executable, args=args, env=get_default_environment())
    return Client(stdio_upstream(command, server="bench", max_bytes=cap, errlog=sys.stderr), mode="legacy", cache=None)


async def run_big_result_bench(megabytes: float, repeats: int) -> dict[str, Any]:
    cap = int(megabytes * 1_000_000) * 2 + (1 << 20)
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "bench.json"
        server = {"command": sys.executable, "args": _BULK, "max_result_bytes": cap}
        nexus = {"mode": "passthrough", "state_dir": tmp, "embedder": "hashing", "call_timeout": 600}
        config.write_text(json.dumps({"mcpServers": {"bulk": server}, "nexus": nexus}))
        gateway_args = ["-m", "nexus_gateway", "serve", "--config", str(config), "--log-level", "warning"]
        async with _client(_BULK, cap) as direct, _client(gateway_args, cap) as gateway:
            await gateway.list_tools()
            paths: list[tuple[Client, str, list[float]]] = [(direct, "blob", []), (gateway, "bulk__blob", [])]
            for i in range(repeats):
                for client, tool, samples in paths if i % 2 else reversed(paths):
                    started = time.perf_counter()
                    result = await client.call_tool(tool, {"megabytes": megabytes})
                    samples.append(time.perf_counter() - started)
                    text = "".join(getattr(block, "text", "") for block in result.content)
                    if result.is_error or len(text) != int(megabytes * 1_000_000):
                        raise RuntimeError(f"benchmark call to {tool} returned {len(text)} characters: {text[:200]}")
    report: dict[str, Any] = {"megabytes": megabytes, "repeats": repeats, "transport": "stdio"}
    for name, (_, _, samples) in zip(("direct", "gateway"), paths, strict=True):
        report[f"{name}_s_best"] = round(min(samples), 3)
        report[f"{name}_s_median"] = round(statistics.median(samples), 3)
        report[f"{name}_mb_per_s"] = round(megabytes / statistics.median(samples), 1)
    report["gateway_over_direct"] = round(report["gateway_s_median"] / report["direct_s_median"], 2)
    return report


def run(megabytes: float, repeats: int) -> dict[str, Any]:
    return anyio.run(run_big_result_bench, megabytes, repeats)
