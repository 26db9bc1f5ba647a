"""Every broken config, through the command line as a user runs it: one clear line, exit status 2."""

import json
from pathlib import Path

import pytest

from tests.conftest import cli

BROKEN: dict[str, tuple[bytes, list[str]]] = {
    "invalid UTF-8": (b'{"mcpServers": {"a": {"command": "caf\xe9"}}}', [":1: not UTF-8 text", "0xe9"]),
    "invalid JSON": (
        b'{\n  "mcpServers": {\n    "a": {"command": "x",}\n  }\n}',
        [":3:26: invalid JSON: Expecting property name"],
    ),
    "wrong type": (
        json.dumps({"mcpServers": {"git": {"command": "uvx", "args": "mcp-server-git"}}}).encode(),
        ["server 'git', key 'args': Input should be a valid list"],
    ),
    "unknown embedder": (
        json.dumps({"mcpServers": {}, "nexus": {"embedder": "word2vec"}}).encode(),
        ["nexus settings, key 'embedder': Unknown embedder 'word2vec'"],
    ),
    "unknown mode": (
        json.dumps({"mcpServers": {}, "nexus": {"mode": "sometimes"}}).encode(),
        ["nexus settings, key 'mode': Input should be 'passthrough', 'routed' or 'auto'"],
    ),
    "missing command": (
        json.dumps({"mcpServers": {"x": {"args": ["-y", "server"]}}}).encode(),
        ["server 'x': needs either 'command' (a local stdio server) or 'url' (a remote server)"],
    ),
    "empty command": (
        json.dumps({"mcpServers": {"x": {"command": ""}}}).encode(),
        ["server 'x', key 'command': String should have at least 1 character"],
    ),
    "bad input": (
        json.dumps({"servers": {"gh": {"type": "stdio", "command": "x", "env": {"T": "${input:gh-token}"}}}}).encode(),
        ["server 'gh', key 'env.T': input 'gh-token' has no value here", "NEXUS_INPUT_GH_TOKEN"],
    ),
    "bad engine setting": (
        json.dumps({"mcpServers": {}, "nexus": {"engine": {"n_ctx": "big"}}}).encode(),
        ["nexus.engine: n_ctx: Input should be a valid integer"],
    ),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_config_check_prints_one_line_naming_file_and_key_and_exits_2(tmp_path: Path, case: str):
    content, expected = BROKEN[case]
    path = tmp_path / "a-config-file-with-a-rather-long-name-so-the-line-is-long.json"
    path.write_bytes(content)
    result = cli("config", "check", "--config", str(path))
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith(f"error: {path}")
    for part in expected:
        assert part in lines[0]


def test_serve_rejects_an_unknown_embedder_with_the_same_line_as_config_check(tmp_path: Path):
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps({"mcpServers": {}, "nexus": {"embedder": "word2vec", "state_dir": str(tmp_path)}}))
    checked = cli("config", "check", "--config", str(path))
    served = cli("serve", "--config", str(path), "--transport", "http", "--port", "0")
    assert checked.returncode == served.returncode == 2
    assert checked.stderr.strip() == served.stderr.strip().splitlines()[-1]
