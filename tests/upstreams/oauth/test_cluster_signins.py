"""Two gateway replicas sharing one real Redis (`nexus.cluster`): a sign-in made through one is used by both, and a
token about to expire is renewed once across them (the authorization server rotates refresh tokens, so a replayed
refresh token would be refused)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from cryptography.fernet import Fernet

from nexus_gateway.config import GatewayConfig
from nexus_gateway.upstreams.pool import UpstreamState
from tests.conftest import free_port, make_config, text_of
from tests.state.conftest import RedisServer, redis_server  # noqa: F401  (the fixture)
from tests.upstreams.oauth.authserver import AuthServer, running_auth_server
from tests.upstreams.oauth.test_upstream_oauth import gateway_of, healthy, signed_in

pytestmark = pytest.mark.anyio


@pytest.fixture
async def auth() -> AsyncIterator[AuthServer]:
    async with running_auth_server(free_port()) as server:
        yield server


def replica(folder: Path, auth: AuthServer, redis: RedisServer, key: str, port: int) -> GatewayConfig:
    folder.mkdir()
    entry = {"type": "http", "url": auth.resource, "oauth": {"redirect_port": port}, "connect_mode": "legacy"}
    cluster = {"redis_url": redis.url, "token_key": key, "key_prefix": "c:"}
    return make_config(folder, {"prot": entry}, mode="passthrough", run=False, embedder="hashing", cluster=cluster)


async def test_a_sign_in_through_one_replica_serves_both_and_a_refresh_is_made_once(
    tmp_path: Path,
    auth: AuthServer,
    redis_server: RedisServer,  # noqa: F811
) -> None:
    key, port = Fernet.generate_key().decode(), free_port()
    first = replica(tmp_path / "a", auth, redis_server, key, port)
    second = replica(tmp_path / "b", auth, redis_server, key, port)
    async with gateway_of(first) as (_, host_a, up_a), gateway_of(second) as (_, host_b, up_b):
        assert up_a.state is UpstreamState.NEEDS_AUTHORIZATION and up_b.state is UpstreamState.NEEDS_AUTHORIZATION
        await signed_in(first)  # the person signs in through the first replica only
        await healthy(up_a)
        await healthy(up_b)  # the second sees it in Redis
        assert text_of(await host_b.call_tool("prot__whoami", {})) == "ada"

        assert up_a.auth is not None and up_b.auth is not None
        soon = auth.tokens[-1].expires_at - 30  # within a minute of expiry on both replicas
        up_a.auth.clock.now = up_b.auth.clock.now = lambda: soon
        texts: list[str] = []

        async def call(host: object, i: int) -> None:
            texts.append(text_of(await host.call_tool("prot__echo", {"text": str(i)})))  # type: ignore[attr-defined]

        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                for i in range(4):
                    group.start_soon(call, host_a if i % 2 else host_b, i)
        assert sorted(texts) == ["0", "1", "2", "3"]
        # neither replica sent a refresh the server refused (the second waited for the first, then took its tokens)
        assert up_a.auth.required is None and up_b.auth.required is None
    assert auth.grants == ["authorization_code", "refresh_token"]  # one refresh for both replicas
    assert auth.refused == 0  # no replayed refresh token
    assert not list((tmp_path / "a").rglob("*.token")) and not list((tmp_path / "b").rglob("*.token"))
    raw = redis_server.client()
    for name in raw.scan_iter(match="c:oauth:*"):
        value = raw.get(name) or b""
        assert all(token.access_token.encode() not in value for token in auth.tokens)


async def test_without_a_token_key_the_upstream_says_what_to_set_and_nothing_is_kept(
    tmp_path: Path,
    auth: AuthServer,
    redis_server: RedisServer,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NEXUS_TOKEN_KEY", raising=False)
    cfg = replica(tmp_path / "a", auth, redis_server, "", free_port())  # `${env:...}` of an unset variable
    async with gateway_of(cfg) as (_, host, upstream):
        with anyio.fail_after(10):
            while upstream.last_error is None:
                await anyio.sleep(0.02)
        result = await host.call_tool("prot__whoami", {})
    assert result.is_error
    assert upstream.last_error is not None
    for message in (upstream.last_error, text_of(result)):
        assert "set nexus.cluster.token_key" in message and "$NEXUS_TOKEN_KEY" in message
    assert list(redis_server.client().scan_iter(match="c:oauth:*")) == []
    assert not list((tmp_path / "a").rglob("*.token")) and not list((tmp_path / "a").rglob("key"))
