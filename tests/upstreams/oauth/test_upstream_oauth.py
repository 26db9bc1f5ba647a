"""The gateway signs in to a remote upstream that asks for OAuth: a real authorization server (authlib's) and an MCP
server it protects run on loopback; the gateway runs in memory with a host client on its front.

What a browser does is done by `browse`: a GET of the authorization URL (the server approves at once) and a GET of
the redirect it answers with, which reaches the sign-in's loopback listener."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client

from nexus_gateway.cli.auth import status_rows
from nexus_gateway.config import GatewayConfig
from nexus_gateway.gateway import Gateway
from nexus_gateway.server.app import build_server
from nexus_gateway.upstreams.oauth import OAuthUpstreams
from nexus_gateway.upstreams.oauth.signin import SignedIn, SignInFailed, sign_in
from nexus_gateway.upstreams.pool import Upstream, UpstreamState
from tests.conftest import free_port, make_config, text_of
from tests.upstreams.oauth.authserver import AuthServer, query_of, running_auth_server

pytestmark = pytest.mark.anyio


async def browse(url: str) -> None:
    """A browser: open the authorization URL, follow its redirect to the loopback redirect URI."""
    async with httpx2.AsyncClient(timeout=10) as http:
        answer = await http.get(url)
        assert answer.status_code == 302, answer.text
        landed = await http.get(answer.headers["location"])
        assert landed.status_code == 200


@pytest.fixture
async def auth() -> AsyncIterator[AuthServer]:
    async with running_auth_server(free_port()) as server:
        yield server


def config(
    tmp_path: Path, auth: AuthServer, *, connect_mode: str = "legacy", sse: bool = False, **oauth: Any
) -> GatewayConfig:
    oauth.setdefault("redirect_port", free_port())
    url = f"{auth.issuer}/sse" if sse else auth.resource
    entry = {"type": "sse" if sse else "http", "url": url, "oauth": oauth, "connect_mode": connect_mode}
    return make_config(tmp_path, {"prot": entry}, mode="passthrough", run=False, embedder="hashing")


@asynccontextmanager
async def gateway_of(cfg: GatewayConfig) -> AsyncIterator[tuple[Gateway, Client, Upstream]]:
    async with Gateway(cfg) as gateway:
        with anyio.fail_after(20):
            await gateway.wait_ready()
        upstream = gateway.pool.get("prot")
        assert upstream is not None
        async with Client(build_server(gateway), mode="legacy", cache=None) as host:  # type: ignore[arg-type]
            yield gateway, host, upstream


async def signed_in(cfg: GatewayConfig) -> SignedIn:
    oauth = OAuthUpstreams(cfg, Path(cfg.nexus.state_dir or ""))
    spec = cfg.servers["prot"]
    assert spec.__class__.__name__ == "RemoteServer"
    with anyio.fail_after(30):
        return await sign_in(
            "prot", spec, oauth.store, show=browse, lock_dir=oauth.lock_dir, sign_in_command="login", timeout=30
        )  # type: ignore[arg-type]


async def healthy(upstream: Upstream) -> None:
    with anyio.fail_after(20):
        while not upstream.connected:
            await anyio.sleep(0.02)


async def test_an_upstream_that_asks_for_a_sign_in_waits_for_one_and_its_calls_say_what_to_run(
    tmp_path: Path, auth: AuthServer
):
    cfg = config(tmp_path, auth)
    async with gateway_of(cfg) as (_, host, upstream):
        assert upstream.state is UpstreamState.NEEDS_AUTHORIZATION
        assert upstream.restarts == 0
        result = await host.call_tool("prot__whoami", {})
        assert result.is_error
        assert f"nexus-gateway auth login prot -c {cfg.path}" in text_of(result)
        assert "needs authorization" in text_of(result)
    assert auth.authorize_requests == []  # the running gateway never starts an authorization by itself
    assert [row["state"] for row in status_rows(cfg)] == ["needs authorization"]


async def test_after_a_sign_in_the_waiting_upstream_connects_and_serves_calls(tmp_path: Path, auth: AuthServer):
    cfg = config(tmp_path, auth)
    async with gateway_of(cfg) as (_, host, upstream):
        outcome = await signed_in(cfg)
        assert (outcome.asked, outcome.tools, outcome.refreshable) == (True, 3, True)
        await healthy(upstream)
        result = await host.call_tool("prot__whoami", {})
        assert text_of(result) == "ada"
    (request,) = auth.authorize_requests
    assert request["code_challenge_method"] == "S256" and len(request["code_challenge"]) == 43
    assert request["resource"] == auth.resource  # RFC 8707
    assert request["scope"] == "mcp"  # from the server's metadata
    assert auth.registrations == 1 and auth.grants == ["authorization_code"]
    assert [row["state"] for row in status_rows(cfg)] == ["signed in"]


async def test_an_upstream_reached_in_the_stateless_era_signs_in_and_serves_calls(tmp_path: Path, auth: AuthServer):
    cfg = config(tmp_path, auth, connect_mode="auto")  # server/discover first (2026-07-28)
    async with gateway_of(cfg) as (_, host, upstream):
        assert upstream.state is UpstreamState.NEEDS_AUTHORIZATION
        await signed_in(cfg)
        await healthy(upstream)
        assert text_of(await host.call_tool("prot__echo", {"text": "modern"})) == "modern"


async def test_an_sse_upstream_signs_in_and_serves_calls(tmp_path: Path, auth: AuthServer):
    cfg = config(tmp_path, auth, sse=True)
    async with gateway_of(cfg) as (_, host, upstream):
        assert upstream.state is UpstreamState.NEEDS_AUTHORIZATION
        await signed_in(cfg)
        await healthy(upstream)
        assert text_of(await host.call_tool("prot__echo", {"text": "over sse"})) == "over sse"
    assert auth.authorize_requests[-1]["resource"] == f"{auth.issuer}/sse"


async def test_a_pre_registered_client_signs_in_with_its_secret_and_asks_for_the_configured_scopes(
    tmp_path: Path, auth: AuthServer
):
    port = free_port()
    client = auth.register(f"http://127.0.0.1:{port}/callback")
    assert client.client_secret is not None
    cfg = config(
        tmp_path, auth, redirect_port=port, client_id=client.client_id, client_secret=client.client_secret, scopes=["x"]
    )
    outcome = await signed_in(cfg)
    assert outcome.asked and outcome.tools == 3
    assert auth.registrations == 0 and auth.token_auth == ["basic"]
    assert auth.authorize_requests[0]["client_id"] == client.client_id
    assert set(auth.authorize_requests[0]["scope"].split()) == {"mcp", "x"}


async def test_a_token_about_to_expire_is_renewed_before_it_is_sent_without_the_host_noticing(
    tmp_path: Path, auth: AuthServer
):
    cfg = config(tmp_path, auth)
    await signed_in(cfg)
    async with gateway_of(cfg) as (_, host, upstream):
        await healthy(upstream)
        assert upstream.auth is not None
        upstream.auth.clock.now = lambda: auth.tokens[-1].expires_at - 30  # within a minute of expiry
        for _ in range(3):
            assert text_of(await host.call_tool("prot__whoami", {})) == "ada"
    assert auth.grants == ["authorization_code", "refresh_token"]
    assert auth.refused == 0  # renewed before it was sent, not after a refusal


async def test_concurrent_calls_share_one_refresh(tmp_path: Path, auth: AuthServer):
    cfg = config(tmp_path, auth)
    await signed_in(cfg)
    async with gateway_of(cfg) as (_, host, upstream):
        await healthy(upstream)
        assert upstream.auth is not None
        upstream.auth.clock.now = lambda: auth.tokens[-1].expires_at - 30
        texts: list[str] = []

        async def call(i: int) -> None:
            texts.append(text_of(await host.call_tool("prot__echo", {"text": str(i)})))

        async with anyio.create_task_group() as tg:
            for i in range(6):
                tg.start_soon(call, i)
    assert sorted(texts) == [str(i) for i in range(6)]
    assert auth.grants.count("refresh_token") == 1


async def test_a_token_refused_before_its_time_is_renewed_and_the_call_goes_through(tmp_path: Path, auth: AuthServer):
    cfg = config(tmp_path, auth)
    await signed_in(cfg)
    async with gateway_of(cfg) as (_, host, upstream):
        await healthy(upstream)
        for token in auth.tokens:
            token.revoked = True  # the access token only: its refresh token still holds
        assert text_of(await host.call_tool("prot__whoami", {})) == "ada"
    assert auth.grants == ["authorization_code", "refresh_token"]


async def test_a_refused_refresh_turns_the_upstream_to_needs_authorization_with_a_clear_message(
    tmp_path: Path, auth: AuthServer
):
    cfg = config(tmp_path, auth)
    await signed_in(cfg)
    async with gateway_of(cfg) as (_, host, upstream):
        await healthy(upstream)
        auth.revoke_all(refresh=True)
        result = await host.call_tool("prot__whoami", {})
        assert result.is_error
        message = text_of(result)
        assert "needs authorization" in message and "refused to renew the sign-in" in message
        assert f"nexus-gateway auth login prot -c {cfg.path}" in message
        with anyio.fail_after(10):
            while upstream.state is not UpstreamState.NEEDS_AUTHORIZATION:
                await anyio.sleep(0.02)
        assert upstream.last_error is not None and "invalid_grant" in upstream.last_error
        # a new sign-in brings it back
        await signed_in(cfg)
        await healthy(upstream)
        assert text_of(await host.call_tool("prot__whoami", {})) == "ada"
    (row,) = status_rows(cfg)
    assert row["state"] == "signed in"


async def test_a_restarted_gateway_keeps_the_sign_in(tmp_path: Path, auth: AuthServer):
    cfg = config(tmp_path, auth)
    await signed_in(cfg)
    for _ in range(2):
        async with gateway_of(cfg) as (_, host, upstream):
            await healthy(upstream)
            assert text_of(await host.call_tool("prot__whoami", {})) == "ada"
    assert auth.grants == ["authorization_code"] and len(auth.authorize_requests) == 1


async def test_signing_out_stops_a_running_gateway_using_the_sign_in(tmp_path: Path, auth: AuthServer):
    cfg = config(tmp_path, auth)
    await signed_in(cfg)
    async with gateway_of(cfg) as (gateway, host, upstream):
        await healthy(upstream)
        assert upstream.auth is not None
        assert gateway.pool.oauth.store.delete("prot", auth.resource)
        now = upstream.auth.clock.now()
        upstream.auth.clock.now = lambda: now + 5  # the store is looked at again every few seconds
        for token in auth.tokens:
            token.revoked = True  # what a sign-out at the server does
        result = await host.call_tool("prot__whoami", {})
        assert result.is_error and "auth logout" in text_of(result)
    assert auth.grants == ["authorization_code"]  # no refresh with the forgotten refresh token


async def test_a_sign_in_the_person_refuses_fails_with_the_servers_reason(tmp_path: Path, auth: AuthServer):
    cfg = config(tmp_path, auth)
    oauth = OAuthUpstreams(cfg, Path(cfg.nexus.state_dir or ""))

    async def refuse(url: str) -> None:
        redirect = query_of(url)["redirect_uri"]
        async with httpx2.AsyncClient() as http:
            await http.get(f"{redirect}?error=access_denied&state={query_of(url)['state']}")

    with pytest.raises(SignInFailed, match="access_denied"), anyio.fail_after(30):
        await sign_in(
            "prot",
            cfg.servers["prot"],  # type: ignore[arg-type]
            oauth.store,
            show=refuse,
            lock_dir=oauth.lock_dir,
            sign_in_command="login",
            timeout=30,
        )
    assert auth.grants == []


async def test_a_host_that_takes_url_elicitations_is_sent_the_sign_in_link_and_its_call_goes_through(
    tmp_path: Path, auth: AuthServer
):
    cfg = config(tmp_path, auth)
    asked: list[types.ElicitRequestURLParams] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams)
        asked.append(params)
        await browse(params.url)  # the person signs in
        return types.ElicitResult(action="accept")

    async with Gateway(cfg) as gateway:
        with anyio.fail_after(20):
            await gateway.wait_ready()
        front = build_server(gateway)
        async with Client(front, mode="legacy", cache=None, elicitation_callback=elicit) as host:  # type: ignore[arg-type]
            with anyio.fail_after(30):
                result = await host.call_tool("prot__whoami", {})
            assert not result.is_error and text_of(result) == "ada"
    (params,) = asked
    assert params.url.startswith(f"{auth.issuer}/authorize?") and "prot" in params.message
    assert auth.grants == ["authorization_code"]


async def test_a_host_that_declines_the_sign_in_gets_the_command_to_run(tmp_path: Path, auth: AuthServer):
    cfg = config(tmp_path, auth)

    async def decline(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async with Gateway(cfg) as gateway:
        with anyio.fail_after(20):
            await gateway.wait_ready()
        async with Client(build_server(gateway), mode="legacy", cache=None, elicitation_callback=decline) as host:  # type: ignore[arg-type]
            result = await host.call_tool("prot__whoami", {})
    assert result.is_error and f"nexus-gateway auth login prot -c {cfg.path}" in text_of(result)
    assert auth.grants == []


async def test_a_step_up_the_running_gateway_meets_is_asked_for_by_the_next_sign_in(tmp_path: Path, auth: AuthServer):
    cfg = config(tmp_path, auth)
    await signed_in(cfg)
    async with gateway_of(cfg) as (_, host, upstream):
        await healthy(upstream)
        result = await host.call_tool("prot__admin_only", {})  # 403 insufficient_scope: the admin scope too
        assert result.is_error and "needs authorization" in text_of(result)
        await signed_in(cfg)  # asks for `mcp admin`, though connecting is challenged for `mcp` only
        await healthy(upstream)
        assert text_of(await host.call_tool("prot__admin_only", {})) == "admin"
    assert set(auth.authorize_requests[-1]["scope"].split()) == {"mcp", "admin"}
    assert len(auth.authorize_requests) == 2  # the running gateway asked nobody itself


async def test_a_remote_upstream_that_never_asks_for_oauth_never_opens_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import uvicorn
    from mcp.server.mcpserver import MCPServer

    import nexus_gateway.upstreams.oauth as oauth_package

    opened: list[Path] = []
    monkeypatch.setattr(oauth_package, "open_store", lambda state_dir: opened.append(state_dir))
    plain = MCPServer("plain")

    @plain.tool()
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(plain.streamable_http_app(), host="127.0.0.1", port=port, log_level="error"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(10):
            while not server.started:
                await anyio.sleep(0.01)
        entry = {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"}
        cfg = make_config(tmp_path, {"plain": entry}, mode="passthrough", run=False, embedder="hashing")
        async with Gateway(cfg) as gateway:
            with anyio.fail_after(20):
                await gateway.wait_ready()
            async with Client(build_server(gateway), mode="legacy", cache=None) as host:  # type: ignore[arg-type]
                assert text_of(await host.call_tool("plain__echo", {"text": "hi"})) == "hi"
        server.should_exit = True
    assert opened == []
