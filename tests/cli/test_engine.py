"""`nexus-gateway compile`, run as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

TOOLS = [
    {"name": "get_weather", "description": "Current weather.", "inputSchema": {"type": "object"}},
    {"name": "send_email", "description": "Send an email.", "inputSchema": {"type": "object"}},
]


def compile_cli(tools: Path, compiled: Path) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        "-m",
        "nexus_gateway",
        "compile",
        "--tools",
        str(tools),
        "--compiled",
        str(compiled),
        "--n-ctx",
        "512",
        "--threads",
        "1",
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def test_compile_command_writes_blocks_and_a_second_run_skips_them(tmp_path: Path):
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS))
    first = compile_cli(tools, tmp_path / "compiled_schemas")
    assert first.returncode == 0, first.stderr
    assert "2 compiled, 0 unchanged" in first.stdout
    assert len(list((tmp_path / "compiled_schemas").glob("*/*.kvb"))) == 2
    second = compile_cli(tools, tmp_path / "compiled_schemas")
    assert second.returncode == 0 and "0 compiled, 2 unchanged" in second.stdout


def test_compile_command_reports_a_bad_tools_file_without_a_traceback(tmp_path: Path):
    tools = tmp_path / "tools.json"
    tools.write_text("{}")
    result = compile_cli(tools, tmp_path / "compiled_schemas")
    assert result.returncode == 2 and "JSON array of MCP Tool objects" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_benchmarks_default_set_ships_inside_the_package_and_is_enough_for_them():
    import nexus_gateway
    from nexus_gateway.cli.engine import _SHIPPED, _bench_cases

    assert _SHIPPED.is_relative_to(Path(nexus_gateway.__file__).parent)
    chosen, others = _bench_cases(_SHIPPED / "tools.json", _SHIPPED / "cases.jsonl", 20, 0)  # `bench fidelity`
    assert len(chosen) == 20 and len(others) == 40
    assert not {case.record.name for case in chosen} & {case.record.name for case in others}
