"""`nexus-gateway servers list|enable|disable` against a running gateway's HTTP front."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import anyio
import pytest
from mcp import Client

from nexus_gateway.bench._serve import start_http
from tests.conftest import cli, faulty, library

TOKEN = "control-token"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def write(tmp_path: Path) -> Path:
    config = tmp_path / "gateway.json"
    nexus = {"state_dir": str(tmp_path / "state"), "embedder": "hashing", "mode": "passthrough", "auth_tokens": [TOKEN]}
    servers = {"alpha": faulty("--name", "alpha"), "beta": library()}
    config.write_text(json.dumps({"mcpServers": servers, "nexus": nexus}))
    return config


def announce(tmp_path: Path, url: str) -> None:
    """What the daemon writes for the CLI: its URL and its bearer token."""
    folder = tmp_path / "state" / "daemon"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "daemon.json").write_text(json.dumps({"url": url, "pid": 0}))
    (folder / "token").write_text(TOKEN)


async def listed(url: str) -> set[str]:
    import httpx

    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http:
        from mcp.client.streamable_http import streamable_http_client

        async with Client(streamable_http_client(f"{url}/mcp", http_client=http), mode="legacy", cache=None) as client:
            return {tool.name for tool in (await client.list_tools()).tools}


async def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return await anyio.to_thread.run_sync(lambda: cli(*args))


def stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=15)


@pytest.mark.anyio
async def test_disable_stops_a_server_of_the_running_gateway_across_a_restart_and_enable_brings_it_back(
    tmp_path: Path,
):
    config = write(tmp_path)
    proc, url = start_http(config)
    try:
        announce(tmp_path, url)
        with anyio.fail_after(120):
            assert {"alpha__echo", "beta__echo"} <= await listed(url)
            disabled = await run_cli("servers", "disable", "beta", "--config", str(config))
            after = await listed(url)
            shown = await run_cli("servers", "list", "--json", "--config", str(config))
    finally:
        stop(proc)
    assert disabled.returncode == 0, disabled.stderr
    assert "beta: disabled" in disabled.stdout
    assert "alpha__echo" in after and not any(name.startswith("beta__") for name in after)
    rows = {row["name"]: row for row in json.loads(shown.stdout)}
    assert rows["beta"]["enabled"] is False and rows["beta"]["state"] == "stopped"
    assert rows["alpha"]["enabled"] is True and rows["alpha"]["state"] == "healthy"

    proc, url = start_http(config)  # the switch is remembered in the state directory
    try:
        announce(tmp_path, url)
        with anyio.fail_after(120):
            restarted = await listed(url)
            enabled = await run_cli("servers", "enable", "beta", "--config", str(config))
            while not {"alpha__echo", "beta__echo"} <= (now := await listed(url)):
                await anyio.sleep(0.05)
    finally:
        stop(proc)
    assert not any(name.startswith("beta__") for name in restarted)
    assert enabled.returncode == 0 and "beta: enabled" in enabled.stdout
    assert "beta__shelve" in now


def test_servers_without_a_daemon_or_with_an_unknown_name_say_what_to_do(tmp_path: Path):
    config = write(tmp_path)
    missing = cli("servers", "list", "--config", str(config))
    assert missing.returncode == 2
    assert "error: no daemon running; start one with `nexus-gateway daemon`" in missing.stderr
    proc, url = start_http(config)
    try:
        announce(tmp_path, url)
        unknown = cli("servers", "disable", "gamma", "--config", str(config))
    finally:
        stop(proc)
    assert unknown.returncode == 2
    assert "No server 'gamma' is configured; servers: alpha, beta." in unknown.stderr
