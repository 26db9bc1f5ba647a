"""`nexus-gateway bench proxy` on a tiny run: the gateway, a peer given as a command spec, the floor (the
line-copying relay that ships with the bench), and missing peers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

KEPT_KEYS = {
    "direct_ms_p50",
    "gateway_ms_p50",
    "direct_ms_p99",
    "gateway_ms_p99",
    "calls",
    "overhead_ms_p50",
    "transport",
}


def test_bench_proxy_measures_the_gateway_a_command_peer_and_the_floor_and_notes_the_missing_ones(tmp_path: Path):
    out, plot = tmp_path / "proxy.json", tmp_path / "proxy.png"
    env = {**os.environ, "PATH": os.path.dirname(sys.executable)}  # no mcp-proxy on the path
    tiny = ["--rounds", "2", "--calls", "3", "--warmup", "1", "--concurrency", "1,2", "--throughput-calls", "4"]
    peers = [
        "--peer",
        "upstream-itself=stdio:{upstream}",
        "--peer",
        "floor",
        "--peer",
        "mcp-proxy",
        "--peer",
        "no-such-proxy",
    ]
    command = [sys.executable, "-m", "nexus_gateway", "bench", "proxy", *tiny, "--cold-starts", "2", *peers]
    done = subprocess.run(
        [*command, "--json", str(out), "--plot", str(plot)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report.keys() >= KEPT_KEYS and report["transport"] == "stdio" and report["calls"] == 6
    assert abs(report["overhead_ms_p50"] - (report["gateway_ms_p50"] - report["direct_ms_p50"])) < 1e-3
    [ours] = report["nexus"]
    peer, floor = report["peers"]
    for row in (ours, peer, floor):
        assert row["ms_p50"] > 0 and row["cpu_ms_per_call"] >= 0 and row["rss_mb"] > 0
        assert set(row["calls_per_s"]) == {"1", "2"} and len(row["cold_start_s_samples"]) == 2
    assert peer["name"] == "upstream-itself" and peer["transport"] == "stdio"
    assert floor["name"] == "floor" and floor["transport"] == "stdio" and floor["rss_mb"] < ours["rss_mb"]
    notes = "\n".join(report["notes"])
    assert "mcp-proxy: not installed" in notes and "no-such-proxy: unknown peer" in notes
    assert "note: mcp-proxy: not installed" in done.stdout
    assert "| nexus-gateway | stdio |" in done.stdout and "| upstream-itself | stdio |" in done.stdout
    assert "| floor | stdio |" in done.stdout
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
