"""`nexus-gateway auth status|logout|login` as a user runs them: what they say, without a network or a token."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import cli, faulty, write_config

REMOTE = {"type": "http", "url": "https://mcp.example.com/mcp"}


def test_status_lists_each_remote_server_and_logout_of_one_never_signed_in_says_so(tmp_path: Path):
    servers = {"remote": REMOTE, "off": REMOTE | {"oauth": False}, "local": faulty()}
    config = write_config(tmp_path, servers)
    status = cli("auth", "status", "-c", str(config), "--json")
    assert status.returncode == 0, status.stderr
    rows = {row["server"]: row["state"] for row in json.loads(status.stdout)}
    assert rows == {"remote": "not signed in", "off": "off"}  # a local server has no sign-in
    logout = cli("auth", "logout", "remote", "-c", str(config))
    assert logout.returncode == 0 and "no sign-in was kept" in logout.stdout


def test_login_names_what_is_wrong_with_the_server_asked_for(tmp_path: Path):
    config = write_config(tmp_path, {"local": faulty(), "off": REMOTE | {"oauth": False}})
    for name, expected in (
        ("nope", "no server named 'nope' (servers: local, off)"),
        ("local", "only remote servers sign in"),
        ("off", '"oauth": false'),
    ):
        done = cli("auth", "login", name, "-c", str(config), "--no-browser")
        assert done.returncode == 2 and expected in done.stderr and "Traceback" not in done.stderr, done.stderr
