"""Latency of tools/call through the gateway against the same upstream called directly.

Both clients talk stdio to their own process; calls alternate direct / gateway so both see the same
machine load, and the report is the two distributions side by side.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from mcp import Client, StdioServerParameters

_ECHO = [sys.executable, "-m", "nexus_gateway.bench.echo_server"]


def _percentile(samples: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(samples) * 1000.0, q)), 4)


async def run_proxy_bench(calls: int = 500, warmup: int = 50) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "bench.json"
        config.write_text(
            json.dumps(
                {
                    "mcpServers": {"echo": {"command": _ECHO[0], "args": _ECHO[1:]}},
                    "nexus": {"mode": "passthrough", "state_dir": tmp},
                }
            )
        )
        direct_params = StdioServerParameters(command=_ECHO[0], args=_ECHO[1:])
        gateway_params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "nexus_gateway", "serve", "--config", str(config), "--log-level", "warning"],
        )
        async with (
            Client(direct_params, mode="legacy", cache=None) as direct,
            Client(gateway_params, mode="legacy", cache=None) as gateway,
        ):
            await gateway.list_tools()
            targets: list[tuple[Client, str, list[float]]] = [(direct, "echo", []), (gateway, "echo__echo", [])]
            for i in range(warmup + calls):
                for client, tool, samples in targets if i % 2 else reversed(targets):
                    start = time.perf_counter()
                    result = await client.call_tool(tool, {"text": "ping"})
                    elapsed = time.perf_counter() - start
                    if result.is_error:
                        raise RuntimeError(f"benchmark call to {tool} failed: {result.content}")
                    if i >= warmup:
                        samples.append(elapsed)
            direct_samples, gateway_samples = targets[0][2], targets[1][2]
    return {
        "direct_ms_p50": _percentile(direct_samples, 50),
        "gateway_ms_p50": _percentile(gateway_samples, 50),
        "direct_ms_p99": _percentile(direct_samples, 99),
        "gateway_ms_p99": _percentile(gateway_samples, 99),
        "calls": calls,
        "overhead_ms_p50": round(_percentile(gateway_samples, 50) - _percentile(direct_samples, 50), 4),
        "transport": "stdio",
    }


def run(calls: int, warmup: int) -> dict[str, Any]:
    return anyio.run(run_proxy_bench, calls, warmup)
