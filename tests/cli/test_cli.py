"""The command line, run as a user runs it."""

import json
from pathlib import Path

from tests.conftest import cli, faulty, write_config


def test_config_check_accepts_a_good_file(tmp_path: Path):
    result = cli("config", "check", "--config", str(write_config(tmp_path, {"one": faulty()})))
    assert result.returncode == 0 and "config is valid" in result.stdout


def test_config_check_names_the_broken_key_without_a_traceback(tmp_path: Path):
    path = tmp_path / "broken.json"
    path.write_text(json.dumps({"mcpServers": {"git": {"command": "uvx", "args": "mcp-server-git"}}}))
    result = cli("config", "check", "--config", str(path))
    assert result.returncode == 2
    assert "server 'git', key 'args': Input should be a valid list" in result.stderr
    assert "Traceback" not in result.stderr


def test_config_check_connect_reports_a_dead_upstream(tmp_path: Path):
    config = write_config(tmp_path, {"ok": faulty(), "dead": {"command": "no-such-binary-here"}})
    result = cli("config", "check", "--config", str(config), "--connect")
    assert result.returncode == 1
    assert "ok: 4 tools ok" in result.stdout and "no-such-binary-here" in result.stdout


def test_tools_json_lists_the_catalog_and_health(tmp_path: Path):
    result = cli("tools", "--config", str(write_config(tmp_path, {"one": faulty()})), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["upstreams"][0] | {"name": "one", "state": "healthy", "tools": 4} == report["upstreams"][0]
    assert {tool["name"] for tool in report["tools"]} == {"one__echo", "one__grow", "one__pid", "one__sleep"}
    assert next(t for t in report["tools"] if t["name"] == "one__echo")["signature"].startswith("one__echo(text: str)")


def test_import_claude_moves_servers_and_keeps_a_backup(tmp_path: Path):
    claude = tmp_path / "claude_desktop_config.json"
    original = {
        "mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}, "remote": {"url": "http://x/sse"}},
        "globalShortcut": "Ctrl+Space",
    }
    claude.write_text(json.dumps(original))
    target = tmp_path / "nexus-gateway.json"
    result = cli("import-claude", "--claude-config", str(claude), "--output", str(target), "--write")
    assert result.returncode == 0, result.stderr
    gateway_config = json.loads(target.read_text())
    assert gateway_config["mcpServers"] == original["mcpServers"]
    rewritten = json.loads(claude.read_text())
    assert list(rewritten["mcpServers"]) == ["nexus-gateway"]
    assert rewritten["mcpServers"]["nexus-gateway"]["args"][-2:] == ["--config", str(target.resolve())]
    assert rewritten["globalShortcut"] == "Ctrl+Space"
    backups = list(tmp_path.glob("claude_desktop_config.json.bak-*"))
    assert len(backups) == 1 and json.loads(backups[0].read_text()) == original


def test_import_claude_without_write_only_prints_the_entry(tmp_path: Path):
    claude = tmp_path / "claude.json"
    claude.write_text(json.dumps({"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}))
    before = claude.read_text()
    result = cli("import-claude", "--claude-config", str(claude), "--output", str(tmp_path / "g.json"))
    assert result.returncode == 0 and claude.read_text() == before
    printed = json.loads(result.stdout[result.stdout.index("{") :])
    assert list(printed["mcpServers"]) == ["nexus-gateway"]


def test_import_claude_with_connect_writes_the_entry_that_attaches_to_the_daemon(tmp_path: Path):
    claude = tmp_path / "claude.json"
    claude.write_text(json.dumps({"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}))
    target = tmp_path / "g.json"
    result = cli("import-claude", "--claude-config", str(claude), "--output", str(target), "--write", "--connect")
    assert result.returncode == 0, result.stderr
    entry = json.loads(claude.read_text())["mcpServers"]["nexus-gateway"]
    assert entry["args"][-3:] == ["connect", "--config", str(target.resolve())]


def test_unknown_transport_is_a_usage_error(tmp_path: Path):
    result = cli("serve", "--config", str(write_config(tmp_path, {})), "--transport", "carrier-pigeon")
    assert result.returncode == 2 and "must be stdio, sse or http" in result.stderr
