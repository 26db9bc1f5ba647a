"""The gateway as an OAuth resource server (server/oauth/): a real authorization server on loopback
(tests/server/oauth/_issuer.py), the gateway over HTTP with `nexus.oauth`, and the official SDK client signing in."""

from __future__ import annotations

import http.client
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from nexus_gateway.bench._serve import start_http
from tests.conftest import library, text_of
from tests.server.oauth._issuer import SCOPE, Issuer

ADMIN = "static-admin-token"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
ERAS = ["legacy", "auto"]


def oauth_config(tmp: Path, issuer: str, **oauth: Any) -> Path:
    nexus = {
        "state_dir": str(tmp / "state"),
        "embedder": "hashing",
        "mode": "passthrough",
        "run": False,
        "usage_examples": False,
        "auth_tokens": [ADMIN],
        "profiles": {"reader": {"servers": ["lib"], "include_tools": ["lib__echo"]}, "other": {}},
        "oauth": {
            "issuer": issuer,
            "required_scopes": [SCOPE],
            "profiles": [{"claim": "groups", "value": "readers", "profile": "reader"}],
            **oauth,
        },
    }
    config = tmp / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {"lib": library()}, "nexus": nexus}))
    return config


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with Issuer().serving() as served:
        yield served


LOGS: list[str] = []
"""The gateway's stderr, logged at debug level."""


@pytest.fixture(scope="module")
def gateway_url(issuer: Issuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = oauth_config(tmp_path_factory.mktemp("oauth"), issuer.url)
    proc, url = start_http(config, "--log-level", "debug", stderr_lines=LOGS)
    yield url
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=15)


class _Memory:
    """The SDK client's `TokenStorage`, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def signing_in(server_url: str) -> OAuthClientProvider:
    """The SDK's OAuth provider for `server_url`, whose 'browser' follows the authorization URL to the
    authorization server (which approves at once) and hands the redirect's code back."""
    redirected: list[str] = []

    async def open_browser(authorization_url: str) -> None:
        async with httpx.AsyncClient(timeout=10) as browser:
            answer = await browser.get(authorization_url)
        assert answer.status_code == 302, answer.text
        redirected.append(answer.headers["location"])

    async def callback() -> AuthorizationCodeResult:
        query = parse_qs(urlsplit(redirected.pop()).query)
        return AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0])

    metadata = OAuthClientMetadata(
        client_name="remote agent",
        redirect_uris=["http://127.0.0.1:9/callback"],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
    )
    return OAuthClientProvider(server_url, metadata, _Memory(), open_browser, callback)


def _post(url: str, token: str | None = None) -> httpx.Response:
    headers = {"Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.post(url, json=INIT, headers=headers, timeout=30)


def _challenge(response: httpx.Response) -> dict[str, str]:
    header = response.headers["www-authenticate"]
    assert header.startswith("Bearer ")
    return {
        key.strip(): value.strip().strip('"')
        for key, _, value in (part.partition("=") for part in header[len("Bearer ") :].split('", '))
    }


# -- the official SDK client signs in --


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_the_sdk_client_signs_in_with_oauth_then_lists_and_calls_on_mcp(
    gateway_url: str, issuer: Issuer, era: str
):
    provider = signing_in(f"{gateway_url}/mcp")
    with anyio.fail_after(60):
        async with (
            httpx2.AsyncClient(auth=provider, timeout=30) as http,
            Client(streamable_http_client(f"{gateway_url}/mcp", http_client=http), mode=era, cache=None) as client,
        ):
            listed = {tool.name for tool in (await client.list_tools()).tools}
            called = await client.call_tool("lib__echo", {"text": "signed in"})
    assert {"lib__echo", "lib__shelve"} <= listed
    assert text_of(called) == "signed in"
    assert issuer.issued[-1] == gateway_url  # the token asked for this gateway (RFC 8707 resource), as advertised


@pytest.mark.anyio
async def test_the_sdk_client_signs_in_with_oauth_on_sse(gateway_url: str):
    provider = signing_in(f"{gateway_url}/sse")
    with anyio.fail_after(60):
        async with Client(sse_client(f"{gateway_url}/sse", auth=provider), mode="legacy", cache=None) as client:
            called = await client.call_tool("lib__echo", {"text": "over sse"})
    assert text_of(called) == "over sse"


@pytest.mark.anyio
async def test_the_sdk_client_signs_in_for_a_profile_path_and_sees_that_profile(gateway_url: str, issuer: Issuer):
    url = f"{gateway_url}/p/reader/mcp"
    with anyio.fail_after(60):
        async with (
            httpx2.AsyncClient(auth=signing_in(url), timeout=30) as http,
            Client(streamable_http_client(url, http_client=http), cache=None) as client,
        ):
            listed = {tool.name for tool in (await client.list_tools()).tools}
    assert listed == {"lib__echo"}
    assert issuer.issued[-1] == url  # the path-scoped metadata's resource


# -- what a client without a valid token is told --


def test_no_token_is_a_401_that_names_the_resource_metadata_and_the_scope(gateway_url: str):
    refused = _post(f"{gateway_url}/mcp")
    challenge = _challenge(refused)
    assert refused.status_code == 401
    assert challenge == {"resource_metadata": f"{gateway_url}/.well-known/oauth-protected-resource", "scope": SCOPE}
    metadata = httpx.get(challenge["resource_metadata"]).json()
    assert metadata["resource"] == gateway_url
    assert metadata["scopes_supported"] == [SCOPE]
    assert metadata["bearer_methods_supported"] == ["header"]


def test_a_profile_path_has_its_own_resource_metadata(gateway_url: str, issuer: Issuer):
    challenge = _challenge(_post(f"{gateway_url}/p/reader/mcp"))
    metadata = httpx.get(challenge["resource_metadata"])
    unknown = httpx.get(f"{gateway_url}/.well-known/oauth-protected-resource/p/nobody/mcp")
    assert challenge["resource_metadata"] == f"{gateway_url}/.well-known/oauth-protected-resource/p/reader/mcp"
    assert metadata.json()["resource"] == f"{gateway_url}/p/reader/mcp"
    assert metadata.json()["authorization_servers"] == [issuer.url]
    assert unknown.status_code == 404


def test_the_metadata_path_opens_nothing_else_without_a_token(gateway_url: str):
    host, port = urlsplit(gateway_url).netloc.split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    for path in ("/.well-known/oauth-protected-resource/../../mcp", "/.well-known/oauth-protected-resource/p/x/../mcp"):
        connection.request("POST", path, body=json.dumps(INIT), headers={"Content-Type": "application/json"})
        answer = connection.getresponse()
        answer.read()
        assert answer.status == 404, path  # the path is taken as written: no route, nothing served
    connection.close()


@pytest.mark.parametrize(
    ("case", "claims", "status", "error"),
    [
        ("wrong audience", {"aud": "https://another.example.com/mcp"}, 401, "invalid_token"),
        ("expired", {"exp": int(time.time()) - 120, "iat": int(time.time()) - 500}, 401, "invalid_token"),
        ("bad signature", {"signer": "rogue"}, 401, "invalid_token"),
        ("another issuer", {"iss": "https://evil.example.com"}, 401, "invalid_token"),
        ("missing scope", {"scope": "mcp:other"}, 403, "insufficient_scope"),
        ("no expiry", {"exp": None}, 401, "invalid_token"),
    ],
)
def test_a_token_that_is_not_for_this_gateway_is_refused_with_the_right_status(
    gateway_url: str, issuer: Issuer, case: str, claims: dict[str, Any], status: int, error: str
):
    claims = {"aud": gateway_url, **claims}
    signer = issuer.rogue if claims.pop("signer", None) else None
    refused = _post(f"{gateway_url}/mcp", issuer.mint(signer=signer, **claims))
    challenge = _challenge(refused)
    assert refused.status_code == status, case
    assert challenge["error"] == error
    assert challenge["resource_metadata"] == f"{gateway_url}/.well-known/oauth-protected-resource"
    assert challenge["scope"] == SCOPE  # what to ask for (RFC 6750 section 3; the MCP spec's step-up)


def test_a_valid_token_opens_a_session_even_with_a_little_clock_skew_and_a_profiles_token_only_its_path(
    gateway_url: str, issuer: Issuer
):
    accepted = _post(f"{gateway_url}/mcp", issuer.mint(aud=gateway_url))
    skewed = _post(f"{gateway_url}/mcp", issuer.mint(aud=gateway_url, exp=int(time.time()) - 5))  # within leeway
    for_profile = issuer.mint(aud=f"{gateway_url}/p/reader/mcp")
    on_its_path = _post(f"{gateway_url}/p/reader/mcp", for_profile)
    elsewhere = _post(f"{gateway_url}/mcp", for_profile)
    assert accepted.status_code == 200 and "mcp-session-id" in accepted.headers
    assert skewed.status_code == 200
    assert on_its_path.status_code == 200
    assert elsewhere.status_code == 401 and _challenge(elsewhere)["error"] == "invalid_token"


def test_an_oauth_token_reaches_the_mcp_endpoints_only(gateway_url: str, issuer: Issuer):
    token = {"Authorization": f"Bearer {issuer.mint(aud=gateway_url)}"}
    health = httpx.get(f"{gateway_url}/healthz", headers=token)
    control = httpx.get(f"{gateway_url}/control/servers", headers=token)
    assert health.status_code == control.status_code == 403


# -- claims choose a profile; static tokens keep working --


@pytest.mark.anyio
async def test_a_claim_mapped_to_a_profile_serves_that_profile(gateway_url: str, issuer: Issuer):
    token = issuer.mint(aud=gateway_url, groups=["staff", "readers"])
    headers = {"Authorization": f"Bearer {token}"}
    with anyio.fail_after(60):
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(f"{gateway_url}/mcp", http_client=http), cache=None) as client,
        ):
            listed = {tool.name for tool in (await client.list_tools()).tools}
            other_path = await http.post(f"{gateway_url}/p/other/mcp", json=INIT)
    assert listed == {"lib__echo"}
    assert other_path.status_code == 403 and "profile 'reader'" in other_path.json()["message"]


@pytest.mark.anyio
async def test_static_auth_tokens_keep_working_beside_oauth(gateway_url: str):
    with anyio.fail_after(60):
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30) as http,
            Client(streamable_http_client(f"{gateway_url}/mcp", http_client=http), cache=None) as client,
        ):
            listed = {tool.name for tool in (await client.list_tools()).tools}
            health = await http.get(f"{gateway_url}/healthz")
    assert {"lib__echo", "lib__shelve"} <= listed
    assert health.status_code == 200


def test_no_access_token_reaches_the_logs_healthz_or_metrics(gateway_url: str, issuer: Issuer):
    refused = _post(f"{gateway_url}/mcp", issuer.mint(aud="https://another.example.com"))
    accepted = _post(f"{gateway_url}/mcp", issuer.mint(aud=gateway_url))
    admin = {"Authorization": f"Bearer {ADMIN}"}
    shown = (
        httpx.get(f"{gateway_url}/healthz", headers=admin).text
        + httpx.get(f"{gateway_url}/metrics", headers=admin).text
    )
    assert refused.status_code == 401 and accepted.status_code == 200
    assert any(f"oauth: accepting access tokens of {issuer.url}" in line for line in LOGS)
    assert any("oauth: refused a token on /mcp" in line for line in LOGS)  # the refusal is logged, at debug
    leaked = [token for token in issuer.minted if any(token in line for line in LOGS) or token in shown]
    assert leaked == []
