"""Run the MCP conformance suite's client authorization scenarios against the gateway acting as the client.

Called by `scripts/conformance.sh --client-auth` (which installs Node 22 and the suite). For each requirement set
(2025-11-25 and 2026-07-28, as `conformance list --client --requirements ERA` prints it) every `auth/` client
scenario it requires is run at that era's wire, and the `auth/` ones it runs but never scores (extensions) are run
and reported as optional. The client is scripts/conformance_client.py: a gateway whose upstream is the scenario's
server, called through its front. Prints a table and writes JSON:

    {"scenarios": [{"name", "era", "required", "passed", "checks_passed", "checks_failed", "failures"}], ...}
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
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
ERAS = ("2025-11-25", "2026-07-28")
SCENARIO_TIMEOUT_MS = 60_000


def listed(suite_dir: Path, era: str) -> tuple[list[str], list[str]]:
    """The era's required client `auth/` scenarios, and the `auth/` ones it runs without scoring."""
    out = subprocess.run(
        ["npx", "--no-install", "conformance", "list", "--client", "--requirements", era],
        cwd=suite_dir,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    required: list[str] = []
    optional: list[str] = []
    section = ""
    for line in out.splitlines():
        if line.startswith("Client scenarios"):
            section = "required"
        elif line.startswith("Run and reported, but never scored"):
            section = "optional"
        elif line and not line.startswith(" "):
            section = "" if section == "required" else section
        entry = line.strip()
        if not entry.startswith("- auth/"):
            continue
        name = entry[2:].split()[0]
        if section == "required":
            required.append(name)
        elif section == "optional" and entry.endswith("[client]"):
            optional.append(name)
    return required, optional


def run_one(suite_dir: Path, command: str, name: str, era: str, out_dir: Path, *, force: bool) -> dict[str, Any]:
    """One scenario at `era`'s wire (`force`: also one the suite would skip there, an extension's)."""
    target = out_dir / era
    target.mkdir(parents=True, exist_ok=True)
    before = set(target.rglob("checks.json"))
    cmd = [
        "npx", "--no-install", "conformance", "client", "--command", command, "--scenario", name,
        "--spec-version", era, "--timeout", str(SCENARIO_TIMEOUT_MS), "-o", str(target),
        *(["--force"] if force else []),
    ]  # fmt: skip
    started = time.monotonic()
    try:
        limit = SCENARIO_TIMEOUT_MS / 1000 + 60
        done = subprocess.run(cmd, cwd=suite_dir, capture_output=True, text=True, timeout=limit)
        code, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired:
        code, output = -1, "timed out"
    checks: list[dict[str, Any]] = []
    for path in set(target.rglob("checks.json")) - before:
        checks += json.loads(path.read_text(encoding="utf-8"))
    failed = [check for check in checks if check.get("status") == "FAILURE"]
    failures = [f"{check.get('id')}: {check.get('errorMessage') or check.get('description')}" for check in failed]
    if code != 0 and not failures:
        tail = [line for line in output.splitlines() if "EXITED" in line or "FAILED" in line or "Error" in line]
        failures = tail[-3:] or [f"exit status {code}"]
    skipped = "SKIPPED" in output and not checks
    return {
        "name": name,
        "era": era,
        "passed": code == 0 and not skipped,
        "skipped": skipped,
        "checks_passed": sum(check.get("status") == "SUCCESS" for check in checks),
        "checks_failed": len(failed),
        "failures": failures,
        "seconds": round(time.monotonic() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite-dir", type=Path, required=True)
    parser.add_argument("--json", type=Path, default=REPO / "docs" / "results" / "conformance_client_auth.json")
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--era", action="append", choices=ERAS, help="Only this requirement set (repeatable).")
    parser.add_argument("--scenario", action="append", help="Only this scenario (repeatable).")
    args = parser.parse_args()
    python = os.environ.get("PYTHON", sys.executable)
    command = f"{shlex.quote(python)} {shlex.quote(str(HERE / 'conformance_client.py'))}"
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="nexus-conformance-client-"))
    version = subprocess.run(
        ["npx", "--no-install", "conformance", "--version"], cwd=args.suite_dir, capture_output=True, text=True
    ).stdout.strip()
    rows: list[dict[str, Any]] = []
    for era in args.era or ERAS:
        required, optional = listed(args.suite_dir, era)
        for name, is_required in [(name, True) for name in required] + [(name, False) for name in optional]:
            if args.scenario and name not in args.scenario:
                continue
            row = run_one(args.suite_dir, command, name, era, work, force=not is_required)
            row["required"] = is_required
            rows.append(row)
            mark = "pass" if row["passed"] else "FAIL"
            kind = "required" if is_required else "optional"
            counts = f"{row['checks_passed']} checks passed, {row['checks_failed']} failed"
            print(f"{era}  {kind:8}  {mark}  {name}  ({counts})")
            for failure in row["failures"][:3]:
                print(f"      {failure}")
    summary = {}
    for era in args.era or ERAS:
        for kind, flag in (("required", True), ("optional", False)):
            picked = [row for row in rows if row["era"] == era and row["required"] is flag]
            summary[f"{era} {kind}"] = f"{sum(row['passed'] for row in picked)}/{len(picked)}"
    for key, value in summary.items():
        print(f"{key}: {value} passed")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    report = {
        "suite": f"@modelcontextprotocol/conformance@{version}",
        "client": "scripts/conformance_client.py (the gateway, its upstream the scenario's server)",
        "commit": commit,
        "summary": summary,
        "scenarios": rows,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.json} (raw results in {work})")


if __name__ == "__main__":
    main()
