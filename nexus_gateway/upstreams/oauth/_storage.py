"""The SDK's `TokenStorage` over one record of a `SignInStore` (store.py), and what it needs of the config."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl, ValidationError

from nexus_gateway.config import RemoteServer, UpstreamOAuth
from nexus_gateway.upstreams.oauth.store import SignInRecord, SignInStore

_WANTED_SCOPE = "wanted_scope"


def redirect_uri(settings: UpstreamOAuth) -> str:
    return f"http://127.0.0.1:{settings.redirect_port}/callback"


def settings_of(spec: RemoteServer) -> UpstreamOAuth:
    return spec.oauth or UpstreamOAuth()


@dataclass
class Clock:
    """What time it is for token expiry (Unix time); tests move it instead of waiting."""

    now: Callable[[], float] = time.time


class RecordStorage:
    """The SDK's `TokenStorage` over one record of a `SignInStore`. A pre-registered client comes from the config
    (its secret is never copied into the store)."""

    def __init__(self, store: SignInStore, name: str, spec: RemoteServer, clock: Clock) -> None:
        self.store = store
        self.name = name
        self.url = spec.url
        self.clock = clock
        settings = settings_of(spec)
        self._configured: OAuthClientInformationFull | None = None
        if settings.client_id is not None:
            secret = settings.client_secret.get_secret_value() if settings.client_secret is not None else None
            method = settings.token_endpoint_auth_method or ("client_secret_basic" if secret else "none")
            self._configured = OAuthClientInformationFull(
                client_id=settings.client_id,
                client_secret=secret,
                redirect_uris=[AnyUrl(redirect_uri(settings))],
                token_endpoint_auth_method=method,
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
            )

    def record(self) -> SignInRecord:
        return self.store.load(self.name, self.url) or SignInRecord(url=self.url)

    def tokens_of(self, record: SignInRecord) -> OAuthToken | None:
        if record.tokens is None:
            return None
        try:
            return OAuthToken.model_validate(record.tokens)
        except ValidationError:
            return None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens_of(self.record())

    async def set_tokens(self, tokens: OAuthToken) -> None:
        record = self.record()
        record.tokens = tokens.model_dump(mode="json", exclude_none=True)
        record.expires_at = self.clock.now() + tokens.expires_in if tokens.expires_in is not None else None
        record.needs = None
        self.store.save(self.name, record)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self._configured is not None:
            return self._configured
        client = self.record().client
        if client is None:
            return None
        try:
            return OAuthClientInformationFull.model_validate(client)
        except ValidationError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self._configured is not None and client_info.client_id == self._configured.client_id:
            return
        record = self.record()
        record.client = client_info.model_dump(mode="json", exclude_none=True)
        self.store.save(self.name, record)

    def forget_tokens(
        self, needs: str | None, *, unless_renewed_from: str | None = None, wanted_scope: str | None = None
    ) -> None:
        """Drop the stored tokens (they were refused), saying why a sign-in is needed. `unless_renewed_from`: only
        if the stored refresh token is still that one (else another process has renewed the sign-in).
        `wanted_scope`: what the server asked for (a step-up's scopes), for the next sign-in to ask for."""
        record = self.record()
        stored = (record.tokens or {}).get("refresh_token")
        if unless_renewed_from is not None and stored is not None and stored != unless_renewed_from:
            return
        record.tokens = None
        record.expires_at = None
        record.needs = needs
        if wanted_scope:
            record.extra[_WANTED_SCOPE] = wanted_scope
        self.store.save(self.name, record)

    def wanted_scope(self) -> str | None:
        """The scopes the server last asked for when a sign-in became required (a step-up's), if any."""
        wanted = self.record().extra.get(_WANTED_SCOPE)
        return wanted if isinstance(wanted, str) else None
