"""Sign-ins kept in the cluster's Redis (`nexus.cluster.redis_url`), sealed with a key every replica shares.

One Redis string per upstream, `<key prefix>oauth:<name>.<url hash>`, whose value is the record (store.py)
encrypted with Fernet (AES-128-CBC + HMAC-SHA256): no token is ever in Redis in clear. The key is
`nexus.cluster.token_key` (`${env:NAME}`), else `NEXUS_TOKEN_KEY`; several keys separated by commas rotate it (the
first seals, any of them opens). With neither, `sealing_key` raises a `ConfigError` that says what to set: a
cluster never keeps a sign-in unsealed, nor falls back to one machine's files that other replicas cannot read.

A sign-in made through one replica (or `nexus-gateway auth login` with the cluster's config) is read by every
replica: their upstreams waiting in "needs authorization" look at the store every 2 s (provider.py). Before a
refresh a provider reads the record again, so a refresh token another replica already rotated is not replayed; the
refresh itself is one at a time across replicas (`refresh_lock`: a Redis key set with NX and an expiry).

A record that cannot be opened (sealed with another key, damaged) reads as no sign-in, with a warning that names the
upstream and the Redis key, never the value. Redis that cannot be reached is an error (`NexusError`), not "no
sign-in": a blip must not sign every replica out.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import anyio

from nexus_gateway.config import ClusterSettings
from nexus_gateway.errors import ConfigError, NexusError
from nexus_gateway.upstreams.oauth.store import SignInRecord, record_key

if TYPE_CHECKING:
    import redis

logger = logging.getLogger(__name__)

_KEY_VARIABLE = "NEXUS_TOKEN_KEY"
_LOCK_TTL = 30.0
"""Seconds a refresh lock lives when its holder never releases it (a replica that died mid-refresh)."""


def sealing_key(cluster: ClusterSettings) -> str:
    """The configured key(s) (`nexus.cluster.token_key`, else `NEXUS_TOKEN_KEY`), or a `ConfigError` saying what to
    set: in a cluster, sign-ins are never kept without one."""
    configured = cluster.token_key.get_secret_value().strip() if cluster.token_key is not None else ""
    if configured:  # `${env:NAME}` of an unset variable is empty: then as if unset
        return configured
    value = os.environ.get(_KEY_VARIABLE, "").strip()
    if value:
        return value
    raise ConfigError(
        "nexus.cluster.redis_url is set, so upstream sign-ins are kept in Redis, sealed with a key every replica "
        'shares, and none is configured: set nexus.cluster.token_key (e.g. "${env:NEXUS_TOKEN_KEY}") or '
        f"${_KEY_VARIABLE} to one Fernet key, the same on every replica (docs/oauth.md)"
    )


def _fernet(keys: str) -> Any:
    from cryptography.fernet import Fernet, MultiFernet

    try:
        return MultiFernet([Fernet(part.strip().encode()) for part in keys.split(",") if part.strip()])
    except ValueError:
        raise ConfigError(
            "the token key (nexus.cluster.token_key or $NEXUS_TOKEN_KEY) is not a Fernet key (32 bytes, URL-safe "
            "base64; several are separated by commas)"
        ) from None


class RedisSignInStore:
    """A `SignInStore` (store.py) in Redis, sealed with Fernet; blocking (each call is one round trip)."""

    def __init__(self, url: str, keys: str, *, prefix: str = "nexus:", timeout: float = 0.5) -> None:
        import redis

        self._fernet = _fernet(keys)
        self._prefix = f"{prefix}oauth:"
        self._client: redis.Redis = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
        self._url = url

    @classmethod
    def of(cls, cluster: ClusterSettings) -> RedisSignInStore:
        assert cluster.redis_url is not None
        return cls(cluster.redis_url, sealing_key(cluster), prefix=cluster.key_prefix, timeout=cluster.timeout)

    @property
    def where(self) -> str:
        return f"the cluster's Redis (keys {self._prefix}*), sealed with the configured token key"

    def redis_key(self, name: str, url: str) -> str:
        return self._prefix + record_key(name, url)

    def load(self, name: str, url: str) -> SignInRecord | None:
        from cryptography.fernet import InvalidToken

        key = self.redis_key(name, url)
        with self._translated("read"):
            sealed = self._client.get(key)
        if sealed is None:
            return None
        try:
            record = SignInRecord.from_json(self._fernet.decrypt(sealed))
        except (InvalidToken, ValueError):
            logger.warning(
                "the sign-in of upstream %s (Redis key %s) cannot be read (sealed with another token key, or "
                "damaged); every replica needs the same nexus.cluster.token_key; sign in again",
                name,
                key,
            )
            return None
        return record if record.url == url else None

    def save(self, name: str, record: SignInRecord) -> None:
        sealed = self._fernet.encrypt(record.to_json())
        with self._translated("write"):
            self._client.set(self.redis_key(name, record.url), sealed)

    def delete(self, name: str, url: str) -> bool:
        with self._translated("write"):
            return bool(self._client.delete(self.redis_key(name, url)))

    @contextlib.asynccontextmanager
    async def refresh_lock(self, name: str, url: str, *, wait: float) -> AsyncIterator[None]:
        """One refresh of upstream `name` at a time across replicas, waited for up to `wait` seconds (then the
        refresh goes ahead anyway, as the file lock does); released after, or expired after `_LOCK_TTL`."""
        key = self.redis_key(name, url) + ":lock"
        owner = secrets.token_hex(8)
        held = False
        deadline = time.monotonic() + wait
        while True:
            try:
                held = bool(await anyio.to_thread.run_sync(self._acquire, key, owner))
            except NexusError as exc:
                logger.warning("%s; refreshing without the cluster's lock", exc)
                break
            if held or time.monotonic() >= deadline:
                break
            await anyio.sleep(0.05)
        try:
            yield
        finally:
            if held:
                with contextlib.suppress(NexusError):
                    await anyio.to_thread.run_sync(self._release, key, owner)

    def _acquire(self, key: str, owner: str) -> bool:
        with self._translated("lock"):
            return bool(self._client.set(key, owner, nx=True, px=int(_LOCK_TTL * 1000)))

    _RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"

    def _release(self, key: str, owner: str) -> None:
        with self._translated("unlock"):
            self._client.eval(self._RELEASE, 1, key, owner)

    def close(self) -> None:
        self._client.close()

    @contextlib.contextmanager
    def _translated(self, doing: str) -> Any:
        import redis.exceptions

        try:
            yield
        except (redis.exceptions.RedisError, OSError) as exc:
            raise NexusError(
                f"the cluster's Redis could not {doing} a sign-in ({type(exc).__name__}: {exc}); check "
                "nexus.cluster.redis_url and that Redis is up"
            ) from None
