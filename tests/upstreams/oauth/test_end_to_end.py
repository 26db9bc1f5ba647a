"""End to end, as a user runs it: a real authorization server (authlib's) protects an MCP server; the gateway runs
as `nexus-gateway serve --transport http` and the test plays the browser. The upstream waits as "needs
authorization"; the dashboard's Sign in button signs it in (the gateway takes the redirect); calls go through; the
short-lived token is renewed without the host noticing; a restarted gateway keeps the sign-in; a revoked refresh
token turns the upstream to "needs authorization" with the command to run; `nexus-gateway auth login
--no-browser`, run beside the gateway, signs it in again. No token, code or secret is ever seen in clear: not in
the logs (debug level), `/healthz`, `/metrics`, the dashboard, the CLI's output, or the state dir."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from nexus_gateway.bench._serve import start_http
from tests.conftest import free_port, text_of, write_config
from tests.upstreams.oauth.authserver import AuthServer, threaded_auth_server

LIFETIME = 2
"""Seconds an access token lasts: the gateway renews it a second before it expires."""


@pytest.fixture
def auth() -> Iterator[AuthServer]:
    with threaded_auth_server(free_port(), access_lifetime=LIFETIME) as server:
        yield server


def browse(url: str) -> None:
    answer = httpx.get(url, timeout=10)
    assert answer.status_code == 302, answer.text
    assert httpx.get(answer.headers["location"], timeout=10).status_code == 200


def login(config: Path) -> tuple[str, str]:
    """`nexus-gateway auth login prot --no-browser`, the URL it prints opened by the test; (stdout, stderr)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "nexus_gateway", "auth", "login", "prot", "-c", str(config), "--no-browser"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.startswith("http://127.0.0.1:") and "/authorize?" in line:
            browse(line.strip())
            break
    else:
        raise AssertionError(f"auth login printed no URL: {''.join(seen)}")
    stdout, rest = proc.communicate(timeout=60)
    assert proc.returncode == 0, "".join(seen) + rest
    return stdout, "".join(seen) + rest


def get(url: str) -> httpx.Response:
    return httpx.get(url, timeout=10, follow_redirects=True)


def wait_for_state(base: str, state: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        health = get(f"{base}/healthz").json()
        if health["upstreams"].get("prot") == state:
            return dict(health)
        time.sleep(0.1)
    raise AssertionError(f"prot never became {state!r}: {health}")


def call(base: str, tool: str = "prot__whoami") -> tuple[bool, str]:
    async def main() -> tuple[bool, str]:
        with anyio.fail_after(30):
            async with Client(f"{base}/mcp", mode="legacy", cache=None) as host:
                result = await host.call_tool(tool, {})
                return bool(result.is_error), text_of(result)

    return anyio.run(main)


def stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)


def dashboard_sign_in(base: str) -> None:
    """The dashboard's Sign in button, then the browser through the authorization page and back."""
    page = get(f"{base}/ui/upstreams").text
    match = re.search(r'action="/ui/upstreams/sign-in">\s*<input type="hidden" name="csrf" value="([0-9a-f]+)"', page)
    assert match is not None, "no Sign in button on the upstreams page"
    form = {"csrf": match.group(1), "name": "prot"}
    assert httpx.post(f"{base}/ui/upstreams/sign-in", data=form).status_code == 403  # no Origin: refused
    answer = httpx.post(f"{base}/ui/upstreams/sign-in", data=form, headers={"Origin": base}, timeout=30)
    assert answer.status_code == 303 and "/authorize?" in answer.headers["location"]
    browse(answer.headers["location"])


def seen_by_users(base: str) -> str:
    """Everything the gateway shows over HTTP besides MCP: health, metrics, the dashboard's pages."""
    pages = [get(f"{base}/healthz").text, get(f"{base}/metrics").text]
    for page in ("upstreams", "catalog", "quarantine", "calls", "runs", "clients"):
        pages.append(get(f"{base}/ui/{page}").text)
    return "\n".join(pages)


def test_sign_in_refresh_restart_revocation_and_no_secret_in_clear(tmp_path: Path, auth: AuthServer):
    state = tmp_path / "state"
    entry = {"type": "http", "url": auth.resource, "oauth": {"redirect_port": free_port()}}
    config = write_config(tmp_path, {"prot": entry}, mode="passthrough", run=False, embedder="hashing")
    logs: list[str] = []
    shown: list[str] = []

    gateway, base = start_http(config, "--log-level", "debug", stderr_lines=logs)
    try:
        health = wait_for_state(base, "needs authorization")
        assert health["status"] == "degraded"
        failed, message = call(base)
        assert failed and f"nexus-gateway auth login prot -c {config}" in message

        dashboard_sign_in(base)  # the gateway runs this sign-in itself, the redirect comes back to it
        wait_for_state(base, "healthy")
        assert call(base) == (False, "ada")

        first = auth.tokens[-1]
        while not first.is_expired():  # bounded by LIFETIME: the token the gateway holds runs out
            time.sleep(0.05)
        assert call(base) == (False, "ada")
        assert "refresh_token" in auth.grants and auth.refused == 0  # renewed before it was sent
        shown.append(seen_by_users(base))
    finally:
        stop(gateway)

    gateway, base = start_http(config, "--log-level", "debug", stderr_lines=logs)
    try:
        wait_for_state(base, "healthy")
        assert call(base) == (False, "ada")
        assert auth.grants.count("authorization_code") == 1  # the restart kept the sign-in

        auth.revoke_all(refresh=True)
        failed, message = call(base)
        assert failed and "refused to renew the sign-in" in message
        assert f"nexus-gateway auth login prot -c {config}" in message
        wait_for_state(base, "needs authorization")
        shown.append(seen_by_users(base))

        stdout, stderr = login(config)  # the running gateway is not involved: the store is shared
        assert "Signed in to prot (3 tools" in stdout and "renewed automatically" in stdout
        shown += [stdout, stderr]
        wait_for_state(base, "healthy")
        assert call(base) == (False, "ada")
        assert auth.grants.count("authorization_code") == 2
        auth.revoke_all(refresh=True)
        assert call(base)[0]
        status = subprocess.run(
            [sys.executable, "-m", "nexus_gateway", "auth", "status", "-c", str(config), "--json"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        (row,) = json.loads(status.stdout)
        assert row["state"] == "needs authorization" and "invalid_grant" in row["detail"]
        shown += [status.stdout, status.stderr]
    finally:
        stop(gateway)

    secrets = auth.every_secret()
    assert len(secrets) >= 6  # the codes, access and refresh tokens, the registered client's secret
    everything = "\n".join(logs + shown)
    assert "DEBUG" in everything  # the logs were as talkative as they get
    leaked = [secret[:6] + "..." for secret in secrets if secret in everything]
    assert leaked == []
    for path in state.rglob("*"):
        if path.is_file():
            content = path.read_bytes()
            assert not [secret for secret in secrets if secret.encode() in content], path
