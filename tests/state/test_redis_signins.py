"""Upstream sign-ins in the cluster's Redis (upstreams/oauth/redis_store.py), against a real redis-server: shared by
every replica, sealed (no token in clear in Redis), unreadable with another key, refused without a key."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import anyio
import pytest
from cryptography.fernet import Fernet

from nexus_gateway.config import parse_config
from nexus_gateway.errors import ConfigError, NexusError
from nexus_gateway.upstreams.oauth import OAuthUpstreams
from nexus_gateway.upstreams.oauth.redis_store import RedisSignInStore
from nexus_gateway.upstreams.oauth.store import SignInRecord
from tests.state.conftest import RedisServer

pytestmark = pytest.mark.anyio

URL = "https://mcp.example.test/mcp"
ACCESS = "access-6f1c2a9e-secret"
REFRESH = "refresh-93b0d7aa-secret"


def _record() -> SignInRecord:
    return SignInRecord(
        url=URL,
        tokens={"access_token": ACCESS, "token_type": "Bearer", "refresh_token": REFRESH, "expires_in": 3600},
        expires_at=time.time() + 3600,
        client={"client_id": "client-1", "redirect_uris": ["http://127.0.0.1:33418/callback"]},
    )


def _gateway_store(redis_server: RedisServer, tmp_path: Path, key: str | None) -> OAuthUpstreams:
    cluster: dict[str, object] = {"redis_url": redis_server.url, "key_prefix": "t:"}
    if key is not None:
        cluster["token_key"] = key
    config = parse_config({"mcpServers": {}, "nexus": {"state_dir": str(tmp_path), "cluster": cluster}})
    return OAuthUpstreams(config, tmp_path)


def test_a_sign_in_saved_by_one_replica_is_read_by_another_and_sealed(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    key = Fernet.generate_key().decode()
    first = _gateway_store(redis_server, tmp_path / "a", key).store
    second = _gateway_store(redis_server, tmp_path / "b", key).store
    assert isinstance(first, RedisSignInStore) and isinstance(second, RedisSignInStore)

    first.save("calendar", _record())
    read = second.load("calendar", URL)
    assert read is not None and read.tokens is not None
    assert read.tokens["access_token"] == ACCESS and read.tokens["refresh_token"] == REFRESH
    assert second.load("calendar", "https://other.example.test/mcp") is None  # a record never goes to another URL

    raw = redis_server.client()
    keys = list(raw.scan_iter(match="*"))
    assert keys == [b"t:oauth:" + first.redis_key("calendar", URL).removeprefix("t:oauth:").encode()]
    for name in keys:
        value = raw.get(name)
        assert value is not None
        for secret in (ACCESS, REFRESH, "access_token", "refresh_token", "client-1"):
            assert secret.encode() not in value and secret.encode() not in name
    assert not any(path.is_file() for path in tmp_path.rglob("*.token"))  # nothing kept on one machine's disk

    assert second.delete("calendar", URL) is True
    assert first.load("calendar", URL) is None


def test_another_key_reads_as_no_sign_in_with_a_clear_warning(
    redis_server: RedisServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    owner = _gateway_store(redis_server, tmp_path / "a", Fernet.generate_key().decode()).store
    stranger = _gateway_store(redis_server, tmp_path / "b", Fernet.generate_key().decode()).store
    owner.save("calendar", _record())
    with caplog.at_level(logging.WARNING, logger="nexus_gateway.upstreams.oauth.redis_store"):
        assert stranger.load("calendar", URL) is None
    assert "calendar" in caplog.text and "token_key" in caplog.text and "sign in again" in caplog.text
    assert ACCESS not in caplog.text and REFRESH not in caplog.text


def test_a_rotated_key_still_opens_what_the_old_one_sealed(redis_server: RedisServer, tmp_path: Path) -> None:
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    _gateway_store(redis_server, tmp_path / "a", old).store.save("calendar", _record())
    rotated = _gateway_store(redis_server, tmp_path / "b", f"{new},{old}").store
    record = rotated.load("calendar", URL)
    assert record is not None and record.tokens is not None and record.tokens["access_token"] == ACCESS
    rotated.save("calendar", record)  # sealed again with the new key: the new key alone opens it
    alone = _gateway_store(redis_server, tmp_path / "c", new).store.load("calendar", URL)
    assert alone is not None and alone.tokens == record.tokens


def test_the_key_comes_from_nexus_token_key_else_a_clear_error(
    redis_server: RedisServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NEXUS_TOKEN_KEY", raising=False)
    for unset in (None, ""):  # "" is what `${env:NAME}` of an unset variable gives
        with pytest.raises(ConfigError) as refused:
            _ = _gateway_store(redis_server, tmp_path, unset).store
        message = str(refused.value)
        assert "nexus.cluster.token_key" in message and "NEXUS_TOKEN_KEY" in message and "Fernet" in message
    assert list(redis_server.client().scan_iter(match="*")) == []

    with pytest.raises(ConfigError, match="not a Fernet key"):
        _ = _gateway_store(redis_server, tmp_path, "not-a-key").store

    monkeypatch.setenv("NEXUS_TOKEN_KEY", Fernet.generate_key().decode())
    store = _gateway_store(redis_server, tmp_path, None).store
    store.save("calendar", _record())
    assert store.load("calendar", URL) is not None


def test_redis_down_is_an_error_not_a_sign_out(redis_server: RedisServer, tmp_path: Path) -> None:
    store = _gateway_store(redis_server, tmp_path, Fernet.generate_key().decode()).store
    store.save("calendar", _record())
    redis_server.stop()
    with pytest.raises(NexusError, match="Redis could not read a sign-in"):
        store.load("calendar", URL)


async def test_one_refresh_at_a_time_across_replicas(redis_server: RedisServer, tmp_path: Path) -> None:
    key = Fernet.generate_key().decode()
    first = _gateway_store(redis_server, tmp_path / "a", key).store
    second = _gateway_store(redis_server, tmp_path / "b", key).store
    assert isinstance(first, RedisSignInStore) and isinstance(second, RedisSignInStore)
    order: list[str] = []
    first_holds = anyio.Event()
    release_first = anyio.Event()

    async def hold() -> None:
        async with first.refresh_lock("calendar", URL, wait=10):
            order.append("first in")
            first_holds.set()
            await release_first.wait()
            order.append("first out")

    async def contend() -> None:
        await first_holds.wait()
        async with second.refresh_lock("calendar", URL, wait=10):
            order.append("second in")

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(hold)
            group.start_soon(contend)
            await first_holds.wait()
            lock = second.redis_key("calendar", URL) + ":lock"
            assert await anyio.to_thread.run_sync(second._acquire, lock, "third") is False  # held by the first
            assert order == ["first in"]
            release_first.set()
    assert order == ["first in", "first out", "second in"]
    assert list(redis_server.client().scan_iter(match="*:lock")) == []  # released
