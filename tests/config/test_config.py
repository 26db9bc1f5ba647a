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
    with pytest.raises(
        ConfigError, match=r"f\.json: server 'a', key 'command': environment variable \$\{NOPE\} is not set"
    ):
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


def stdio(**entry: object) -> dict:
    return {"mcpServers": {"a": {"command": "x", **entry}}}


def test_cursor_and_vs_code_variables_are_expanded(tmp_path: Path):
    data = stdio(
        args=["${userHome}", "${workspaceFolder}", "${workspaceFolderBasename}", "a${pathSeparator}b${/}c", "${1}"],
        env={"TOKEN": "${env:TOKEN}", "MISSING": "<${env:NOT_SET}>"},
    )
    config = parse_config(data, environ={"TOKEN": "t0k", "NEXUS_WORKSPACE_FOLDER": str(tmp_path / "proj")})
    spec = config.servers["a"]
    assert spec.args == [str(Path.home()), str(tmp_path / "proj"), "proj", "a/b/c", "${1}"]  # type: ignore[union-attr]
    assert spec.env == {"TOKEN": "t0k", "MISSING": "<>"}  # type: ignore[union-attr]


def test_the_workspace_folder_is_the_setting_relative_to_the_config_else_the_current_folder(tmp_path: Path):
    path = tmp_path / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text(json.dumps(stdio(args=["${workspaceFolder}"]) | {"nexus": {"workspace_folder": ".."}}))
    assert load_config(path, environ={}).servers["a"].args == [str(tmp_path)]  # type: ignore[union-attr]
    assert parse_config(stdio(args=["${workspaceFolder}"]), environ={}).servers["a"].args == [str(Path.cwd())]  # type: ignore[union-attr]


def test_an_input_without_a_value_names_the_input_and_the_variable_to_set():
    data = stdio(env={"KEY": "${input:perplexity-key}"}) | {
        "inputs": [{"type": "promptString", "id": "perplexity-key", "description": "Perplexity API Key"}]
    }
    with pytest.raises(ConfigError) as info:
        parse_config(data, label="mcp.json", environ={})
    assert str(info.value) == (
        "mcp.json: server 'a', key 'env.KEY': input 'perplexity-key' (Perplexity API Key) has no value here: "
        "set the environment variable NEXUS_INPUT_PERPLEXITY_KEY"
    )
    given = parse_config(data, environ={"NEXUS_INPUT_PERPLEXITY_KEY": "pk"})
    assert given.servers["a"].env == {"KEY": "pk"}  # type: ignore[union-attr]


def test_an_input_with_a_declared_default_takes_it():
    data = stdio(args=["${input:region}"]) | {"inputs": [{"type": "pickString", "id": "region", "default": "eu"}]}
    assert parse_config(data, environ={}).servers["a"].args == ["eu"]  # type: ignore[union-attr]


def test_a_variable_only_an_editor_can_resolve_is_a_clear_error():
    with pytest.raises(ConfigError, match=r"server 'a', key 'args\.0': \$\{command:pickFile\} needs the editor"):
        parse_config(stdio(args=["${command:pickFile}"]), environ={})


def test_env_file_values_are_merged_under_env_and_a_missing_one_names_server_and_key(tmp_path: Path):
    (tmp_path / "vars.env").write_text("A=from file\nB=from file\n")
    data = stdio(envFile="vars.env", env={"B": "from env"}) | {"nexus": {"workspace_folder": str(tmp_path)}}
    assert parse_config(data, environ={}).servers["a"].env == {"A": "from file", "B": "from env"}  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match=r"c\.json: server 'a', key 'envFile': cannot read .*nope\.env"):
        parse_config(stdio(envFile=str(tmp_path / "nope.env")), label="c.json", environ={})


def test_a_relative_cwd_is_taken_from_the_workspace_folder(tmp_path: Path):
    data = stdio(cwd="sub") | {"nexus": {"workspace_folder": str(tmp_path)}}
    assert parse_config(data, environ={}).servers["a"].cwd == str(tmp_path / "sub")  # type: ignore[union-attr]


def test_env_values_may_be_numbers_or_null_as_in_vs_code():
    env = parse_config(stdio(env={"PORT": 8080, "DEBUG": True, "GONE": None}), environ={}).servers["a"].env  # type: ignore[union-attr]
    assert env == {"PORT": "8080", "DEBUG": "true", "GONE": None}


def test_a_prefix_must_be_usable_in_tool_names():
    assert parse_config(stdio(prefix=""), environ={}).servers["a"].prefix == ""
    with pytest.raises(ConfigError, match="server 'a', key 'prefix'"):
        parse_config(stdio(prefix="has space"), environ={})


def test_a_wrong_nexus_environment_variable_is_named():
    with pytest.raises(ConfigError, match=r"key 'call_timeout' \(from NEXUS_CALL_TIMEOUT\)"):
        parse_config({}, environ={"NEXUS_CALL_TIMEOUT": "soon"})


def test_a_file_that_is_not_utf8_names_the_file_and_line(tmp_path: Path):
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{\n  "mcpServers": {"a": {"command": "caf\xe9"}}\n}')
    with pytest.raises(ConfigError, match=r"latin1\.json:2: not UTF-8 text \(byte \d+ is 0xe9\)"):
        load_config(path)


def test_a_utf8_file_with_a_byte_order_mark_is_read(tmp_path: Path):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(stdio()).encode())
    assert list(load_config(path, environ={}).servers) == ["a"]


@pytest.mark.parametrize("environ", [{}, {"LINEAR_TOKEN": ""}], ids=["unset", "empty"])
def test_a_header_whose_env_variable_is_unset_is_an_error_naming_the_header_and_the_variable(environ: dict[str, str]):
    remote = {
        "type": "http",
        "url": "https://mcp.example/mcp",
        "headers": {"Authorization": "Bearer ${env:LINEAR_TOKEN}"},
    }
    with pytest.raises(
        ConfigError, match=r"f\.json: server 'linear': header 'Authorization' uses \$\{env:LINEAR_TOKEN\}"
    ):
        parse_config({"mcpServers": {"linear": remote}}, label="f.json", environ=environ)
    config = parse_config({"mcpServers": {"linear": remote}}, label="f.json", environ={"LINEAR_TOKEN": "t0k"})
    linear = config.servers["linear"]
    assert isinstance(linear, RemoteServer) and linear.headers == {"Authorization": "Bearer t0k"}
