"""Run the MCP conformance suite's server scenarios directly against its reference server and through the gateway.

Called by scripts/conformance.sh (which installs Node 22, the suite and the reference server). Columns:
  direct       the suite -> reference server /mcp
  passthrough  the suite -> gateway /mcp (mode passthrough) -> reference server over streamable HTTP
  routed       the suite -> gateway /mcp (mode routed, the scenarios' tools pinned) -> reference server
Prints a table scenario x column and writes JSON (default docs/results/conformance.json).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _verify import PYTHON, REPO, free_port, gateway_env, git_commit, log, start, stop, wait_healthy, wait_port

# Tools the server scenarios call (pinned in routed mode, under both the bare and the default `ref__` names).
SCENARIO_TOOLS = [
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_tool_with_logging",
    "test_tool_with_progress",
    "test_error_handling",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "test_reconnection",
    "json_schema_2020_12_tool",
]
UPSTREAM = "ref"
_SUMMARY = re.compile(r"^\s*([✓✗])\s+(\S+):\s+(\d+) passed, (\d+) failed")
_DIR = re.compile(r"^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$")


def run_suite(
    suite_dir: Path, url: str, out_dir: Path, env: dict[str, str], scenarios: list[str], suite: str
) -> dict[str, Any]:
    """One column: the suite against `url`; per scenario: status, passed/failed checks, failure messages."""
    out_dir.mkdir(parents=True, exist_ok=True)
    runs = [["--suite", suite]] if not scenarios else [["--scenario", name] for name in scenarios]
    stdout = ""
    for extra in runs:
        cmd = ["npx", "--no-install", "conformance", "server", "--url", url, "-o", str(out_dir), *extra]
        try:
            done = subprocess.run(cmd, cwd=suite_dir, env=env, capture_output=True, text=True, timeout=900)
            stdout += done.stdout + done.stderr
        except subprocess.TimeoutExpired as exc:
            stdout += f"\n(timed out after 900 s: {exc})\n"
    (out_dir / "suite-output.txt").write_text(stdout)
    results: dict[str, Any] = {}
    for line in stdout.splitlines():
        if match := _SUMMARY.match(line):
            mark, name, passed, failed = match.groups()
            results[name] = {
                "status": "pass" if mark == "✓" and int(failed) == 0 else "fail",
                "passed": int(passed),
                "failed": int(failed),
                "errors": [],
            }
    for checks_file in sorted(out_dir.glob("server-*/checks.json")):
        match = _DIR.match(checks_file.parent.name)
        if not match:
            continue
        name = match.group(1)
        try:
            checks = json.loads(checks_file.read_text())
        except (OSError, ValueError):
            continue
        failed = [c for c in checks if c.get("status") not in ("SUCCESS", "INFO", "WARNING", "SKIPPED")]
        entry = results.setdefault(name, {"passed": 0, "failed": 0, "errors": []})
        entry["passed"] = sum(1 for c in checks if c.get("status") == "SUCCESS")
        entry["failed"] = len(failed)
        entry["status"] = "fail" if failed or not checks else "pass"
        entry["errors"] = [f"{c.get('id')}: {str(c.get('errorMessage', ''))[:600]}" for c in failed]
        warnings = [
            f"{c.get('id')}: {str(c.get('errorMessage', ''))[:300]}" for c in checks if c.get("status") == "WARNING"
        ]
        if warnings:
            entry["warnings"] = warnings
    for name in scenarios:
        results.setdefault(name, {"status": "fail", "passed": 0, "failed": 0, "errors": ["no result (suite crashed?)"]})
    return results


def gateway_config(ref_url: str, mode: str, state_dir: Path, port: int) -> dict[str, Any]:
    nexus: dict[str, Any] = {
        "mode": mode,
        "state_dir": str(state_dir),
        "port": port,
        "embedder": "hashing",
        "call_timeout": 60,
    }
    if mode == "routed":
        nexus["pinned"] = SCENARIO_TOOLS + [f"{UPSTREAM}__{name}" for name in SCENARIO_TOOLS]
    # `prefix: ""` makes the gateway look exactly like the reference server (issue 9, item 8); until the
    # setting exists it is an unknown key (kept, ignored) and the tools are named `ref__<tool>`.
    upstream = {"type": "http", "url": ref_url, "prefix": ""}
    return {"mcpServers": {UPSTREAM: upstream}, "nexus": nexus}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite-dir", type=Path, required=True, help="folder where `npx conformance` resolves")
    parser.add_argument("--reference-dir", type=Path, required=True, help="folder with everything-server.ts + deps")
    parser.add_argument("--work-dir", type=Path, default=None, help="raw results (default: a temp dir)")
    parser.add_argument("--json", type=Path, default=REPO / "docs/results/conformance.json")
    parser.add_argument("--columns", default="direct,passthrough,routed")
    parser.add_argument("--scenario", action="append", default=[], help="only these scenarios (repeatable)")
    parser.add_argument("--suite", default="all", help="the suite's --suite: all (default), active or pending")
    args = parser.parse_args()

    work = args.work_dir or Path(tempfile.mkdtemp(prefix="nexus-conformance-"))
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    columns = [c for c in args.columns.split(",") if c]
    table: dict[str, dict[str, Any]] = {}
    ref_port = free_port()
    ref_url = f"http://127.0.0.1:{ref_port}/mcp"
    ref = start(
        [str(args.reference_dir / "node_modules/.bin/tsx"), "everything-server.ts"],
        log_path=work / "reference.log",
        env={**env, "PORT": str(ref_port), "HOST": "127.0.0.1"},
        cwd=args.reference_dir,
    )
    try:
        if not wait_port(ref_port, timeout=60, proc=ref):
            log("reference server did not start; see", work / "reference.log")
            return 2
        log("reference server on", ref_url)
        for column in columns:
            started = time.monotonic()
            if column == "direct":
                table[column] = run_suite(args.suite_dir, ref_url, work / column, env, args.scenario, args.suite)
            else:
                port = free_port()
                state = work / f"state-{column}"
                config_path = work / f"gateway-{column}.json"
                config_path.write_text(json.dumps(gateway_config(ref_url, column, state, port), indent=2))
                gateway = start(
                    [PYTHON, "-m", "nexus_gateway", "serve", "--config", str(config_path), "--transport", "http"],
                    log_path=work / f"gateway-{column}.log",
                    env=gateway_env(),
                    cwd=REPO,
                )
                try:
                    seconds, body = wait_healthy(port, {UPSTREAM}, timeout=90, proc=gateway)
                    if seconds is None:
                        log(f"gateway ({column}) not healthy: {body}; see", work / f"gateway-{column}.log")
                        table[column] = {"_error": f"gateway not healthy: {body}"}
                        continue
                    log(f"gateway ({column}) healthy after {seconds:.1f} s on port {port}")
                    url = f"http://127.0.0.1:{port}/mcp"
                    table[column] = run_suite(args.suite_dir, url, work / column, env, args.scenario, args.suite)
                finally:
                    stop(gateway)
            log(f"{column}: {time.monotonic() - started:.0f} s")
    finally:
        stop(ref)

    scenarios = sorted({name for col in table.values() for name in col if not name.startswith("_")})
    order = {name: i for i, name in enumerate(_suite_order(args.suite_dir, env))}
    scenarios.sort(key=lambda name: order.get(name, 999))
    width = max((len(name) for name in scenarios), default=10)
    print(f"{'scenario':<{width}}  " + "  ".join(f"{c:<11}" for c in columns))
    for name in scenarios:
        cells = []
        for column in columns:
            entry = table.get(column, {}).get(name)
            cells.append(f"{'-' if entry is None else entry['status']:<11}")
        print(f"{name:<{width}}  " + "  ".join(cells))
    totals = {c: sum(1 for n in scenarios if table.get(c, {}).get(n, {}).get("status") == "pass") for c in columns}
    print(f"{'passed':<{width}}  " + "  ".join(f"{f'{totals[c]}/{len(scenarios)}':<11}" for c in columns))
    regressions = {
        column: [
            name
            for name in scenarios
            if table.get("direct", {}).get(name, {}).get("status") == "pass"
            and table.get(column, {}).get(name, {}).get("status") != "pass"
        ]
        for column in columns
        if column != "direct"
    }
    for column, names in regressions.items():
        print(f"\npass directly, fail through the gateway ({column}): {len(names)}")
        for name in names:
            for error in table[column].get(name, {}).get("errors", [])[:2] or ["(no message)"]:
                print(f"  {name}: {error.splitlines()[0][:240]}")
    document = {
        "suite": "@modelcontextprotocol/conformance " + _suite_version(args.suite_dir),
        "reference": "conformance examples/servers/typescript/everything-server.ts (see scripts/conformance.sh)",
        "gateway_commit": git_commit(),
        "date": time.strftime("%Y-%m-%d"),
        "columns": columns,
        "note": 'gateway columns use upstream `ref` with `prefix: ""`; without the prefix setting tools are `ref__*`',
        "totals": totals,
        "pass_direct_fail_gateway": regressions,
        "results": table,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(document, indent=2) + "\n")
    log("wrote", args.json, "; raw results in", work)
    return 0 if not any(regressions.values()) else 1


def _suite_version(suite_dir: Path) -> str:
    manifest = suite_dir / "node_modules/@modelcontextprotocol/conformance/package.json"
    try:
        return str(json.loads(manifest.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return "?"


def _suite_order(suite_dir: Path, env: dict[str, str]) -> list[str]:
    try:
        done = subprocess.run(
            ["npx", "--no-install", "conformance", "list", "--server"],
            cwd=suite_dir,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [m.group(1) for line in done.stdout.splitlines() if (m := re.match(r"^\s*-\s+(\S+)", line))]


if __name__ == "__main__":
    raise SystemExit(main())
