"""The gateway over HTTP: streamable HTTP and SSE, in both directions, with its guards."""

import http.client
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from nexus_gateway.bench._serve import start_http
from tests.conftest import FAULTY, faulty, free_port, start_gateway_http, text_of, wait_for_port, write_config


@pytest.fixture(scope="module")
def gateway_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A gateway process whose upstreams are one stdio, one streamable-HTTP and one SSE server."""
    tmp = tmp_path_factory.mktemp("http")
    upstreams = []
    servers: dict = {"local": faulty()}
    for transport, name in (("streamable-http", "web"), ("sse", "stream")):
        port = free_port()
        upstreams.append(
            subprocess.Popen(
                [sys.executable, FAULTY, "--transport", transport, "--port", str(port)], stderr=subprocess.DEVNULL
            )
        )
        wait_for_port(port)
        path = "mcp" if transport == "streamable-http" else "sse"
        servers[name] = {"type": "http" if path == "mcp" else "sse", "url": f"http://127.0.0.1:{port}/{path}"}
    proc, url = start_gateway_http(write_config(tmp, servers, mode="passthrough"))
    yield url
    for process in (proc, *upstreams):
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=15)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _exercise(client: Client) -> None:
    names = {tool.name for tool in (await client.list_tools()).tools}
    assert {"local__echo", "web__echo", "stream__echo"} <= names
    for server in ("local", "web", "stream"):
        result = await client.call_tool(f"{server}__echo", {"text": f"via {server}"})
        assert text_of(result) == f"via {server}"


@pytest.mark.anyio
async def test_streamable_http_front_reaches_stdio_http_and_sse_upstreams(gateway_url: str):
    with anyio.fail_after(30):
        async with Client(f"{gateway_url}/mcp", mode="legacy", cache=None) as client:
            await _exercise(client)


@pytest.mark.anyio
async def test_sse_front_reaches_stdio_http_and_sse_upstreams(gateway_url: str):
    with anyio.fail_after(30):
        async with Client(sse_client(f"{gateway_url}/sse"), mode="legacy", cache=None) as client:
            await _exercise(client)


def test_healthz_reports_every_upstream(gateway_url: str):
    health = httpx.get(f"{gateway_url}/healthz").json()
    assert health["status"] == "ok"
    assert health["upstreams"] == {"local": "healthy", "web": "healthy", "stream": "healthy"}


def test_metrics_count_calls_by_server_and_outcome(gateway_url: str):
    async def call() -> None:
        async with Client(f"{gateway_url}/mcp", mode="legacy", cache=None) as client:
            await client.call_tool("web__echo", {"text": "counted"})
            await client.call_tool("web__echo", {"wrong": "arguments"})

    anyio.run(call)
    metrics = httpx.get(f"{gateway_url}/metrics").text
    assert 'nexus_upstream_up{server="stream"} 1' in metrics
    ok = re.search(r'nexus_tool_calls_total\{server="web",outcome="ok"\} (\d+)', metrics)
    invalid = re.search(r'nexus_tool_calls_total\{server="web",outcome="invalid_arguments"\} (\d+)', metrics)
    assert ok and int(ok.group(1)) >= 1 and invalid and int(invalid.group(1)) >= 1
    assert 'nexus_tool_call_seconds_count{server="web"}' in metrics


def test_foreign_host_and_origin_are_rejected(gateway_url: str):
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    bad_host = httpx.post(f"{gateway_url}/mcp", json=body, headers={**headers, "Host": "evil.example:80"})
    assert bad_host.status_code in (400, 403, 421)
    bad_origin = httpx.post(f"{gateway_url}/mcp", json=body, headers={**headers, "Origin": "http://evil.example"})
    assert bad_origin.status_code == 403


@pytest.mark.parametrize("path", ["/healthz", "/metrics"])
def test_health_and_metrics_refuse_a_foreign_host_or_origin(gateway_url: str, path: str):
    """A DNS-rebinding page must not read upstream names and counters."""
    assert httpx.get(f"{gateway_url}{path}").status_code == 200
    assert httpx.get(f"{gateway_url}{path}", headers={"Host": "evil.example"}).status_code == 421
    assert httpx.get(f"{gateway_url}{path}", headers={"Origin": "http://evil.example"}).status_code == 403


def test_rejected_sse_get_gets_one_clean_response_and_no_traceback(tmp_path: Path):
    config = write_config(tmp_path, {"local": faulty()}, mode="routed")
    stderr: list[str] = []
    proc, url = start_http(config, "--log-level", "info", stderr_lines=stderr)
    try:
        connection = http.client.HTTPConnection(url.removeprefix("http://"), timeout=10)
        for headers in ({"Host": "evil.example"}, {"Origin": "http://evil.example"}, {"Host": "evil.example"}):
            connection.request("GET", "/sse", headers=headers)  # the same keep-alive connection each time
            response = connection.getresponse()
            assert response.status in (403, 421) and b"Invalid" in response.read()
        connection.close()
        assert httpx.get(f"{url}/healthz").status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)
    log = "".join(stderr)
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log


def test_an_invalid_request_over_http_is_answered_with_its_own_id(gateway_url: str):
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    opened = httpx.post(
        f"{gateway_url}/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}, headers=headers
    )
    legacy = headers | {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    modern = headers | {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"}
    for era, request_id in ((legacy, 7), (modern, "eight")):
        bad = {"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": [1, 2]}  # params: an object
        response = httpx.post(f"{gateway_url}/mcp", json=bad, headers=era)
        assert response.status_code == 400
        assert response.json()["id"] == request_id and response.json()["error"]["code"] == -32600


def test_oversized_request_is_refused(gateway_url: str):
    payload = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * (5 * 1024 * 1024) + b'"}}'
    response = httpx.post(
        f"{gateway_url}/mcp",
        content=payload,
        headers={"Accept": "application/json, text/event-stream", "Content-Type": "application/json"},
    )
    assert response.status_code == 413 and "limit" in response.json()["message"]


def test_bearer_token_is_required_when_configured(tmp_path: Path):
    config = write_config(tmp_path, {"local": faulty()}, mode="routed", auth_tokens=["s3cret"])
    proc, url = start_gateway_http(config)
    try:
        assert httpx.post(f"{url}/mcp", json={}).status_code == 401
        assert httpx.post(f"{url}/mcp", json={}, headers={"Authorization": "Bearer wrong"}).status_code == 401
        for path in ("/healthz", "/metrics"):
            assert httpx.get(f"{url}{path}").status_code == 401
            assert httpx.get(f"{url}{path}", headers={"Authorization": "Bearer s3cret"}).status_code == 200

        async def call_with_token() -> str:
            async with create_mcp_http_client(headers={"Authorization": "Bearer s3cret"}) as http:
                transport = streamable_http_client(f"{url}/mcp", http_client=http)
                async with Client(transport, mode="legacy", cache=None) as client:
                    result = await client.call_tool("call_tool", {"name": "local__echo", "arguments": {"text": "ok"}})
                    return text_of(result)

        assert anyio.run(call_with_token) == "ok"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)


def test_two_authorization_headers_are_refused_whichever_comes_last(tmp_path: Path):
    """A token that fails and one that passes: refused in either order (the last used to win), with why."""
    config = write_config(tmp_path, {}, mode="routed", embedder="hashing", run=False, auth_tokens=["s3cret"])
    proc, url = start_gateway_http(config)
    try:
        for pair in (["Bearer wrong", "Bearer s3cret"], ["Bearer s3cret", "Bearer wrong"]):
            headers = httpx.Headers([("Authorization", value) for value in pair])
            response = httpx.get(f"{url}/healthz", headers=headers)
            assert response.status_code == 400 and "one Authorization header" in response.json()["message"]
        assert httpx.get(f"{url}/healthz", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)


def test_a_post_to_mcp_without_accept_is_refused_with_406_in_both_eras(gateway_url: str):
    """Both eras' transports ask for application/json and text/event-stream (`Accept: */*` names both)."""
    address = re.sub(r"^http://", "", gateway_url)
    initialize = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",' + (
        '"capabilities":{},"clientInfo":{"name":"t","version":"0"}}}'
    )
    modern = '{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{"_meta":' + (
        '{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}'
    )
    for body, extra in [
        (initialize, {}),
        (modern, {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}),
    ]:
        connection = http.client.HTTPConnection(address, timeout=30)  # sends no Accept of its own
        connection.request("POST", "/mcp", body=body, headers={"Content-Type": "application/json", **extra})
        assert connection.getresponse().status == 406
        connection.close()


def test_a_client_that_drops_mid_body_leaves_one_log_line_and_no_traceback(tmp_path: Path):
    config = write_config(tmp_path, {}, mode="routed", embedder="hashing", run=False)
    lines: list[str] = []
    proc, url = start_http(config, stderr_lines=lines)
    address = re.sub(r"^http://", "", url).split(":")
    try:
        for path in ("/mcp", "/messages/?session_id=" + "0" * 32):
            with socket.create_connection((address[0], int(address[1])), timeout=30) as sock:
                sock.sendall(
                    f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n".encode()
                    + b"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n"
                    + b'{"jsonrpc":"2.0",'
                )
        went_away = [line for line in lines if "went away after 17 bytes" in line]
        deadline = time.monotonic() + 30
        while len(went_away) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
            went_away = [line for line in lines if "went away after 17 bytes" in line]
        assert len(went_away) == 2 and "INFO" in went_away[0], lines
        assert httpx.get(f"{url}/healthz").status_code == 200  # and everything the drops logged is in by now
        assert not [line for line in lines if "Traceback" in line or "ClientDisconnect" in line], lines
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)


def test_busy_port_is_a_clear_error(tmp_path: Path):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        config = write_config(tmp_path, {}, mode="routed")
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "nexus_gateway",
                "serve",
                "--config",
                str(config),
                "--transport",
                "http",
                "--port",
                str(port),
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert result.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in result.stderr
