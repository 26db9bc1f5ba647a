import json
from pathlib import Path

import pytest

from nexus_gateway.config import RemoteServer, StdioServer, load_config, parse_config
from nexus_gateway.errors import ConfigError

CLAUDE_DESKTOP = {
    "mcpServers": {
        "filesystem": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"],
            "env": {"DEBUG": "1"},
        },
        "linear": {
            "type": "http",
            "url": "https://mcp.linear.app/mcp",
            "headers": {"Authorization": "Bearer ${TOKEN}"},
        },
        "legacy": {"url": "http://localhost:9000/sse"},
    },
    "globalShortcut": "Ctrl+Space",
}


def test_claude_desktop_file_is_accepted_as_it_is():
    config = parse_config(CLAUDE_DESKTOP, environ={"TOKEN": "t0k"})
    files, linear, legacy = (config.servers[name] for name in ("filesystem", "linear", "legacy"))
    assert isinstance(files, StdioServer) and files.args[-1] == "/Users/me/Desktop" and files.env == {"DEBUG": "1"}
    assert isinstance(linear, RemoteServer) and linear.transport == "http"
    assert linear.headers == {"Authorization": "Bearer t0k"}
    assert isinstance(legacy, RemoteServer) and legacy.transport == "sse"


def test_unknown_keys_are_kept():
    data = {"mcpServers": {"a": {"command": "x", "alwaysAllow": ["t"]}}, "nexus": {"future_setting": 3}}
    config = parse_config(data, environ={})
    assert config.servers["a"].model_extra == {"alwaysAllow": ["t"]}
    assert config.nexus.model_extra == {"future_setting": 3}
    assert config.raw["mcpServers"]["a"]["alwaysAllow"] == ["t"]


def test_vs_code_servers_key_is_read():
    config = parse_config({"servers": {"time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"]}}})
    assert config.servers["time"].command == "uvx"  # type: ignore[union-attr]


def test_env_defaults_apply_only_when_the_variable_is_unset_or_empty():
    data = {"mcpServers": {"a": {"command": "${CMD:-python}", "args": ["${ARG:-fallback}"]}}}
    assert parse_config(data, environ={"ARG": "given"}).servers["a"].args == ["given"]  # type: ignore[union-attr]
    config = parse_config(data, environ={"ARG": ""})
    assert config.servers["a"].command == "python"  # type: ignore[union-attr]
    assert config.servers["a"].args == ["fallback"]  # type: ignore[union-attr]


def test_missing_env_variable_names_server_and_variable():
    with pytest.raises(ConfigError, match=r"f\.json: server 'a', key 'command': environment variable \$\{NOPE\} is not set"):
        parse_config({"mcpServers": {"a": {"command": "${NOPE}"}}}, label="f.json", environ={})


def test_wrong_value_names_file_server_and_key():
    with pytest.raises(ConfigError) as info:
        parse_config({"mcpServers": {"git": {"command": "uvx", "args": "mcp-server-git"}}}, label="cfg.json")
    assert str(info.value) == "cfg.json: server 'git', key 'args': Input should be a valid list"


def test_entry_without_command_or_url_is_a_clear_error():
    with pytest.raises(ConfigError, match="server 'x': needs either 'command'"):
        parse_config({"mcpServers": {"x": {"args": []}}})


def test_remote_url_must_be_http():
    with pytest.raises(ConfigError, match="server 'r', key 'url'"):
        parse_config({"mcpServers": {"r": {"url": "ftp://example.com"}}})


def test_bad_nexus_setting_names_the_key():
    with pytest.raises(ConfigError, match="nexus settings, key 'mode'"):
        parse_config({"nexus": {"mode": "sometimes"}})


def test_nexus_environment_variables_override_the_file():
    config = parse_config(
        {"nexus": {"mode": "passthrough", "call_timeout": 5}},
        environ={"NEXUS_MODE": "routed", "NEXUS_PINNED": "a__b, c__d", "NEXUS_CALL_TIMEOUT": "2.5"},
    )
    assert config.nexus.mode == "routed"
    assert config.nexus.pinned == ["a__b", "c__d"]
    assert config.nexus.call_timeout == 2.5


def test_invalid_json_reports_file_line_and_column(tmp_path: Path):
    path = tmp_path / "broken.json"
    path.write_text('{\n  "mcpServers": {\n    "a": {"command": "x",}\n  }\n}')
    with pytest.raises(ConfigError, match=r"broken\.json:3:\d+: invalid JSON"):
        load_config(path)


def test_missing_file_is_a_config_error(tmp_path: Path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.json")


def test_builtin_variables_make_configs_portable(tmp_path: Path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"mcpServers": {"a": {"command": "${PYTHON}", "args": ["${CONFIG_DIR}/s.py"]}}}))
    spec = load_config(path, environ={}).servers["a"]
    assert Path(spec.command).name.startswith("python")  # type: ignore[union-attr]
    assert spec.args == [f"{tmp_path.resolve()}/s.py"]  # type: ignore[union-attr]


def test_disabled_servers_are_not_enabled():
    config = parse_config({"mcpServers": {"a": {"command": "x", "disabled": True}, "b": {"command": "y"}}})
    assert list(config.enabled_servers) == ["b"]
