"""/mcp answers with one `application/json` body when nothing will stream for the request, and with an SSE
stream otherwise (server/_quiet.py); both eras, raw httpx and the official client, a real gateway process and
a real upstream (tests/servers/features_server.py)."""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY

from tests.conftest import ROOT, start_gateway_http, stdio_entry, text_of, write_config

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

FEATURES = str(ROOT / "tests" / "servers" / "features_server.py")
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LEGACY = "2025-06-18"
MODERN = "2026-07-28"
DIRECT_IDS = 9_000_000_000_000


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def gateway_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("http_json")
    proc, url = start_gateway_http(write_config(folder, {"features": stdio_entry(FEATURES)}, mode="passthrough"))
    yield url
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=15)


def content_type(response: httpx.Response) -> str:
    return response.headers["content-type"].split(";")[0]


def answer_of(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC answer in a JSON body or as the last message event of an SSE stream."""
    if content_type(response) == "application/json":
        body: dict[str, Any] = response.json()
        return body
    events = [json.loads(data) for data in re.findall(r"^data: (.+)$", response.text, re.MULTILINE)]
    return [event for event in events if "id" in event and "method" not in event][-1]


def legacy_session(http: httpx.Client, url: str, capabilities: dict[str, Any] | None = None) -> dict[str, str]:
    params = {
        "protocolVersion": LEGACY,
        "capabilities": capabilities or {},
        "clientInfo": {"name": "raw", "version": "0"},
    }
    opened = http.post(
        f"{url}/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}, headers=ACCEPT
    )
    headers = {**ACCEPT, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": LEGACY}
    http.post(f"{url}/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return headers


def post(http: httpx.Client, url: str, headers: dict[str, str], request_id: int, method: str, params: Any):
    return http.post(
        f"{url}/mcp", json={"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}, headers=headers
    )


def test_a_handshake_session_gets_json_for_quiet_requests_and_sse_when_progress_will_stream(gateway_url: str):
    with httpx.Client(timeout=30) as http:
        headers = legacy_session(http, gateway_url)
        listed = post(http, gateway_url, headers, 1, "tools/list", {})
        called = post(http, gateway_url, headers, 2, "tools/call", {"name": "features__request_id", "arguments": {}})
        progress = {"name": "features__progress", "arguments": {"steps": 2}, "_meta": {"progressToken": "p"}}
        streamed = post(http, gateway_url, headers, 3, "tools/call", progress)
        again = post(http, gateway_url, headers, 4, "tools/call", {"name": "features__request_id", "arguments": {}})
        metrics = http.get(f"{gateway_url}/metrics").text
    assert content_type(listed) == "application/json" and "features__progress" in listed.text
    assert content_type(called) == "application/json"
    assert int(answer_of(called)["result"]["content"][0]["text"]) >= DIRECT_IDS  # and the upstream call went direct
    assert called.headers.get("connection", "keep-alive").lower() != "close"  # keep-alive
    assert content_type(streamed) == "text/event-stream"
    assert streamed.text.count('"notifications/progress"') == 2 and answer_of(streamed)["result"]["content"]
    assert content_type(again) == "application/json"
    assert re.search(r'nexus_direct_calls_total\{server="features"\} [1-9]', metrics)


def test_a_handshake_host_that_can_be_asked_for_input_keeps_its_sse_stream_for_calls(gateway_url: str):
    with httpx.Client(timeout=30) as http:
        headers = legacy_session(http, gateway_url, {"sampling": {}})
        listed = post(http, gateway_url, headers, 1, "tools/list", {})
        called = post(http, gateway_url, headers, 2, "tools/call", {"name": "features__request_id", "arguments": {}})
    assert content_type(listed) == "application/json"
    assert content_type(called) == "text/event-stream" and answer_of(called)["result"]["content"]


def test_a_handshake_host_that_asked_for_logs_keeps_its_sse_stream_for_calls(gateway_url: str):
    with httpx.Client(timeout=30) as http:
        headers = legacy_session(http, gateway_url)
        leveled = post(http, gateway_url, headers, 1, "logging/setLevel", {"level": "info"})
        called = post(
            http,
            gateway_url,
            headers,
            2,
            "tools/call",
            {"name": "features__log", "arguments": {"level": "warning", "text": "w"}},
        )
    assert content_type(leveled) == "application/json"
    assert content_type(called) == "text/event-stream"
    assert '"notifications/message"' in called.text and answer_of(called)["result"]["content"][0]["text"] == "logged"


def test_a_modern_request_gets_json_unless_it_asked_for_progress(gateway_url: str):
    meta = {
        PROTOCOL_VERSION_META_KEY: MODERN,
        CLIENT_CAPABILITIES_META_KEY: {},
        CLIENT_INFO_META_KEY: {"name": "raw", "version": "0"},
    }
    with httpx.Client(timeout=30) as http:

        def modern(request_id: int, name: str, arguments: dict[str, Any], **extra: Any) -> httpx.Response:
            headers = {**ACCEPT, "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": name}
            params = {"name": name, "arguments": arguments, "_meta": {**meta, **extra}}
            return post(http, gateway_url, headers, request_id, "tools/call", params)

        called = modern(1, "features__request_id", {})
        streamed = modern(2, "features__progress", {"steps": 2}, progressToken="p")
    assert content_type(called) == "application/json" and answer_of(called)["result"]["resultType"] == "complete"
    assert content_type(streamed) == "text/event-stream" and streamed.text.count('"notifications/progress"') == 2


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_the_official_client_calls_over_mcp_with_and_without_progress(gateway_url: str, era: str):
    seen: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(value)

    with anyio.fail_after(60):
        async with Client(f"{gateway_url}/mcp", mode=era, cache=None) as client:
            assert "features__request_id" in {tool.name for tool in (await client.list_tools()).tools}
            called = await client.call_tool("features__request_id", {})
            done = await client.call_tool("features__progress", {"steps": 3}, progress_callback=on_progress)
    assert int(text_of(called)) >= DIRECT_IDS
    assert text_of(done) == "done" and seen == [1, 2, 3]


def test_with_the_fast_path_off_every_handshake_request_gets_an_sse_stream(tmp_path: Path):
    proc, url = start_gateway_http(write_config(tmp_path, {"features": stdio_entry(FEATURES)}, fast_path=False))
    try:
        with httpx.Client(timeout=30) as http:
            headers = legacy_session(http, url)
            listed = post(http, url, headers, 1, "tools/list", {})
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)
    assert content_type(listed) == "text/event-stream"
