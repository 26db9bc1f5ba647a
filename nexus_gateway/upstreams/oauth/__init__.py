"""The gateway as an OAuth 2.1 client of remote upstreams that ask for a sign-in.

    store.py     where sign-ins are kept: the OS keyring, else encrypted files (mode 0600) in the state dir
    redis_store.py  in a cluster (`nexus.cluster.redis_url`): Redis, sealed with a key every replica shares
    provider.py  `UpstreamAuth`: the SDK's OAuth provider with refresh ahead of expiry, one refresh at a time,
                 and "needs authorization" instead of a browser in the running gateway
    signin.py    a person's sign-in: the authorization URL out, the loopback (or pasted) redirect back

`OAuthUpstreams` makes the provider and the sign-in of each remote upstream of a config.
"""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Callable
from pathlib import Path

from nexus_gateway.config import GatewayConfig, RemoteServer, ServerSpec
from nexus_gateway.upstreams.oauth.provider import UpstreamAuth, wants_oauth
from nexus_gateway.upstreams.oauth.signin import GatewaySignIn
from nexus_gateway.upstreams.oauth.store import SignInRecord, SignInStore, open_store

__all__ = ["OAuthUpstreams", "sign_in_command"]


def sign_in_command(name: str, config_path: Path | None) -> str:
    """The command that signs in to upstream `name` of the config at `config_path`."""
    command = f"nexus-gateway auth login {shlex.quote(name)}"
    return command + (f" -c {shlex.quote(str(config_path))}" if config_path is not None else "")


class OAuthUpstreams:
    """The sign-ins of one config's remote upstreams, kept in one store (opened when first needed)."""

    def __init__(self, config: GatewayConfig, state_dir: Path) -> None:
        self._config = config
        self.state_dir = state_dir
        self._store: SignInStore | None = None

    @property
    def store(self) -> SignInStore:
        if self._store is None:
            cluster = self._config.nexus.cluster
            if cluster.redis_url:
                from nexus_gateway.upstreams.oauth.redis_store import RedisSignInStore  # redis-py: only for a cluster

                self._store = RedisSignInStore.of(cluster)
            else:
                self._store = open_store(self.state_dir)
        return self._store

    def _lazy(self) -> SignInStore:
        """The store, opened on first use (a config of servers that never sign in never opens it)."""
        return _LazyStore(lambda: self.store)

    @property
    def lock_dir(self) -> Path:
        return self.state_dir / "oauth"

    def of(self, name: str, spec: ServerSpec) -> tuple[UpstreamAuth, GatewaySignIn] | None:
        """The provider and the gateway-run sign-in of upstream `name`, or None when it never signs in."""
        if not isinstance(spec, RemoteServer) or not wants_oauth(spec):
            return None
        command = sign_in_command(name, self._config.path)
        store = self._lazy()
        auth = UpstreamAuth(name, spec, store, lock_dir=self.lock_dir, sign_in_command=command)
        sign_in = GatewaySignIn(
            name, spec, store, lock_dir=self.lock_dir, sign_in_command=command, signed_in=auth.signed_in
        )
        return auth, sign_in


class _LazyStore:
    """A `SignInStore` opened when first used."""

    def __init__(self, open_store: Callable[[], SignInStore]) -> None:
        self._open = open_store

    @property
    def where(self) -> str:
        return self._open().where

    def load(self, name: str, url: str) -> SignInRecord | None:
        return self._open().load(name, url)

    def save(self, name: str, record: SignInRecord) -> None:
        self._open().save(name, record)

    def delete(self, name: str, url: str) -> bool:
        return self._open().delete(name, url)

    def refresh_lock(self, name: str, url: str, *, wait: float) -> contextlib.AbstractAsyncContextManager[None]:
        """The store's lock on refreshing across replicas (Redis), or none (one machine: the lock file does it)."""
        lock = getattr(self._open(), "refresh_lock", None)
        return lock(name, url, wait=wait) if lock is not None else contextlib.nullcontext()
