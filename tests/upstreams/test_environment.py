"""What a stdio upstream inherits, and the host dialects (envFile, inputs, workspaceFolder) reaching it."""

import json
import sys
from pathlib import Path

import pytest

from nexus_gateway.config import load_config
from nexus_gateway.upstreams.environment import upstream_environment
from tests.conftest import ROOT, running_gateway, text_of, write_config

NAMED = str(ROOT / "tests" / "servers" / "named_server.py")
PROXY_AND_CERTS = {
    "HTTPS_PROXY": "http://proxy.corp:3128",
    "https_proxy": "http://proxy.corp:3128",
    "HTTP_PROXY": "http://proxy.corp:3128",
    "NO_PROXY": "localhost,.corp",
    "ALL_PROXY": "socks5://proxy.corp:1080",
    "SSL_CERT_FILE": "/etc/corp/ca.pem",
    "SSL_CERT_DIR": "/etc/corp/certs",
    "REQUESTS_CA_BUNDLE": "/etc/corp/ca.pem",
    "NODE_EXTRA_CA_CERTS": "/etc/corp/ca.pem",
}


def test_upstreams_inherit_the_sdk_defaults_proxies_and_certificates_but_not_other_secrets():
    environ = {"PATH": "/usr/bin", "HOME": "/home/me", "GITHUB_TOKEN": "secret", **PROXY_AND_CERTS}
    env = upstream_environment({"EXTRA": "1"}, environ=environ)
    assert env == {"PATH": "/usr/bin", "HOME": "/home/me", **PROXY_AND_CERTS, "EXTRA": "1"}


def test_inherit_env_adds_names_and_patterns_and_null_removes_a_variable():
    environ = {"PATH": "/usr/bin", "AWS_PROFILE": "dev", "AWS_REGION": "eu", "OTHER": "x", "FN": "() { :; }"}
    assert upstream_environment({"PATH": None}, inherit=["AWS_*"], environ=environ) == {
        "AWS_PROFILE": "dev",
        "AWS_REGION": "eu",
    }
    assert upstream_environment(None, inherit=["*"], environ=environ) == {
        key: value for key, value in environ.items() if key != "FN"
    }


@pytest.mark.anyio
async def test_a_real_upstream_sees_the_proxy_and_certificate_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    for name, value in PROXY_AND_CERTS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GITHUB_TOKEN", "not for upstreams")
    monkeypatch.setenv("CORP_SETTING", "shared on purpose")
    monkeypatch.setenv("TERM", "xterm")
    entry = {"command": sys.executable, "args": [NAMED, "--tool", "env"], "env": {"TERM": None}}
    config = load_config(write_config(tmp_path, {"one": entry}, mode="passthrough", inherit_env=["CORP_*"]))
    wanted = [*PROXY_AND_CERTS, "GITHUB_TOKEN", "CORP_SETTING", "PATH", "TERM"]
    async with running_gateway(config) as (_, client):
        seen = json.loads(text_of(await client.call_tool("one__env", {"env": wanted})))["env"]
    assert {name: seen[name] for name in PROXY_AND_CERTS} == PROXY_AND_CERTS
    assert seen["GITHUB_TOKEN"] is None and seen["CORP_SETTING"] == "shared on purpose" and seen["PATH"]
    assert seen["TERM"] is None  # `null` in `env` removes an inherited variable


@pytest.mark.anyio
async def test_a_vs_code_file_with_inputs_env_file_and_workspace_folder_reaches_the_upstream_as_vs_code_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    workspace = tmp_path / "project"
    (workspace / "sub").mkdir(parents=True)
    (workspace / ".env").write_text("# secrets\nexport FROM_FILE=\"file value\"\nFROM_BOTH=file\nQUOTED='a # b'\n")
    (workspace / ".vscode").mkdir()
    config_file = workspace / ".vscode" / "mcp.json"
    config_file.write_text(
        json.dumps(
            {
                "inputs": [{"type": "promptString", "id": "api-key", "description": "API key", "password": True}],
                "servers": {
                    "one": {
                        "type": "stdio",
                        "command": sys.executable,
                        "args": [NAMED, "--tool", "env", "--label", "${workspaceFolderBasename}"],
                        "envFile": "${workspaceFolder}/.env",
                        "env": {
                            "FROM_BOTH": "env",
                            "KEY": "${input:api-key}",
                            "USER_HOME": "${userHome}",
                            "FROM_ENV": "${env:SOME_VAR}",
                            "UNSET": "[${env:NOT_SET_ANYWHERE}]",
                            "PORT": 8080,
                        },
                        "cwd": "sub",
                    }
                },
                "nexus": {"workspace_folder": "..", "state_dir": str(tmp_path / "state"), "mode": "passthrough"},
            }
        )
    )
    monkeypatch.setenv("NEXUS_INPUT_API_KEY", "k-123")
    monkeypatch.setenv("SOME_VAR", "from the environment")
    wanted = ["FROM_FILE", "FROM_BOTH", "QUOTED", "KEY", "USER_HOME", "FROM_ENV", "UNSET", "PORT"]
    async with running_gateway(load_config(config_file)) as (_, client):
        seen = json.loads(text_of(await client.call_tool("one__env", {"env": wanted})))
    assert seen["server"] == "project" and seen["cwd"] == str(workspace / "sub")
    assert seen["env"] == {
        "FROM_FILE": "file value",
        "FROM_BOTH": "env",
        "QUOTED": "a # b",
        "KEY": "k-123",
        "USER_HOME": str(Path.home()),
        "FROM_ENV": "from the environment",
        "UNSET": "[]",
        "PORT": "8080",
    }


def test_the_copy_of_the_sdks_inherited_variables_matches_the_sdk():
    from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS

    from nexus_gateway.upstreams.environment import SDK_INHERITED

    assert list(SDK_INHERITED) == list(DEFAULT_INHERITED_ENV_VARS)
