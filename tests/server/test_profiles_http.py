"""Profiles over HTTP: chosen by a profile's bearer token or by the path `/p/NAME/mcp` (`/p/NAME/sse`)."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import faulty, library, start_gateway_http, text_of

ERAS = ["legacy", "auto"]
ADMIN, OPS = "admin-token", "ops-token"


@pytest.fixture(scope="module")
def gateway_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("profiles")
    profiles = {
        "ops": {"servers": ["alpha"], "mode": "routed", "tokens": [OPS]},
        "web": {"servers": ["beta"], "mode": "passthrough"},
    }
    nexus = {
        "state_dir": str(tmp / "state"),
        "embedder": "hashing",
        "mode": "passthrough",
        "auth_tokens": [ADMIN],
        "profiles": profiles,
    }
    config = tmp / "gateway.json"
    servers = {"alpha": faulty("--name", "alpha"), "beta": library()}
    config.write_text(json.dumps({"mcpServers": servers, "nexus": nexus}))
    proc, url = start_gateway_http(config)
    yield url
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=15)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _http(token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_a_profile_token_on_mcp_sees_searches_and_calls_only_its_profile(gateway_url: str, era: str):
    with anyio.fail_after(60):
        async with (
            _http(OPS) as http,
            Client(streamable_http_client(f"{gateway_url}/mcp", http_client=http), mode=era, cache=None) as client,
        ):
            listed = {tool.name for tool in (await client.list_tools()).tools}
            found = await client.call_tool("search_tools", {"query": "echo the text unchanged", "k": 10})
            hidden = await client.call_tool("call_tool", {"name": "beta__echo", "arguments": {"text": "x"}})
            called = await client.call_tool("call_tool", {"name": "alpha__echo", "arguments": {"text": "in"}})
    assert listed == {"search_tools", "call_tool", "describe_tool", "run"}  # routed: the profile's mode
    found_names = {tool["name"] for tool in found.structured_content["tools"]}  # type: ignore[index]
    assert found_names and all(name.startswith("alpha__") for name in found_names)
    assert hidden.is_error and "Unknown tool 'beta__echo'" in text_of(hidden)
    assert text_of(called) == "in"


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_the_profile_path_serves_only_that_profile_on_streamable_http(gateway_url: str, era: str):
    with anyio.fail_after(60):
        async with (
            _http(ADMIN) as http,
            Client(
                streamable_http_client(f"{gateway_url}/p/web/mcp", http_client=http), mode=era, cache=None
            ) as client,
        ):
            listed = {tool.name for tool in (await client.list_tools()).tools}
            outside = await client.call_tool("alpha__echo", {"text": "x"})
            inside = await client.call_tool("beta__echo", {"text": "in"})
            resources = {str(resource.uri) for resource in (await client.list_resources()).resources}
    assert listed == {"beta__echo", "beta__shelve"}
    assert outside.is_error and "Unknown tool 'alpha__echo'" in text_of(outside)
    assert text_of(inside) == "in"
    assert resources == {"library://readme"}


@pytest.mark.anyio
async def test_the_profile_path_serves_only_that_profile_on_sse(gateway_url: str):
    headers = {"Authorization": f"Bearer {ADMIN}"}
    with anyio.fail_after(60):
        async with Client(sse_client(f"{gateway_url}/p/web/sse", headers=headers), mode="legacy", cache=None) as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
            outside = await client.call_tool("alpha__echo", {"text": "x"})
    assert listed == {"beta__echo", "beta__shelve"}
    assert outside.is_error


def test_a_profile_token_is_refused_on_another_profile_path_and_an_unknown_profile_is_not_found(gateway_url: str):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    other = httpx.post(f"{gateway_url}/p/web/mcp", json=body, headers={"Authorization": f"Bearer {OPS}"})
    unknown = httpx.post(f"{gateway_url}/p/nobody/mcp", json=body, headers={"Authorization": f"Bearer {ADMIN}"})
    anonymous = httpx.post(f"{gateway_url}/p/web/mcp", json=body)
    assert other.status_code == 403 and "profile 'ops'" in other.json()["message"]
    assert unknown.status_code == 404 and unknown.json()["error"] == "unknown_profile"
    assert anonymous.status_code == 401


def test_a_profile_token_cannot_switch_servers_nor_see_the_whole_gateway(gateway_url: str):
    ops = {"Authorization": f"Bearer {OPS}"}
    refused = httpx.post(f"{gateway_url}/control/servers/beta/disable", headers=ops)
    health = httpx.get(f"{gateway_url}/healthz", headers=ops)
    metrics = httpx.get(f"{gateway_url}/p/ops/metrics", headers=ops)
    listed = httpx.get(f"{gateway_url}/control/servers", headers={"Authorization": f"Bearer {ADMIN}"})
    assert refused.status_code == health.status_code == metrics.status_code == 403
    assert {row["name"]: row["enabled"] for row in listed.json()["servers"]} == {"alpha": True, "beta": True}
