"""`UpstreamAuth`: the gateway as an OAuth 2.1 client of one remote upstream (an `httpx2.Auth`).

It is the SDK's `OAuthClientProvider`, which already does RFC 9728 and RFC 8414 discovery (with the SEP-985
fallbacks), client ID metadata documents (CIMD) before RFC 7591 dynamic registration, PKCE S256, the RFC 8707
`resource` parameter, RFC 9207 `iss` and metadata issuer checks, scope selection from the challenge and step-up,
and refresh once a token has expired. Added here:

- the sign-in kept in a `SignInStore` (store.py), with its expiry, so a restart neither signs in again nor sends a
  token it knows has expired;
- refresh *before* expiry (within a minute, or half the token's lifetime when it is shorter) and on a 401 for a
  token not yet expired, one refresh at a time per upstream: in the process (the SDK's lock) and across processes
  (a lock file beside the store), reading the store again first so a refresh another process made is used, not
  repeated (with rotating refresh tokens a repeat would be refused);
- requests sent concurrently while the token is good (the SDK's flow holds its lock from a request until its
  answer's headers, which would serialize every call of a JSON-answering server);
- configured scopes asked for besides those of the challenge, and a pre-registered client from the config;
- without an `Interaction` (the running gateway), a server that wants a sign-in the gateway cannot do on its own
  raises `AuthorizationRequired` inside the request, and `required` says why: the upstream then waits in
  "needs authorization" (`wait_signed_in`) for `nexus-gateway auth login` or a sign-in the gateway runs itself.

Tokens never appear in what this module logs or raises.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from pathlib import Path
from typing import Any, Protocol

import anyio
import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.oauth2 import OAuthContext
from mcp.client.auth.utils import extract_field_from_www_auth, union_scopes
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

from nexus_gateway.config import RemoteServer
from nexus_gateway.upstreams.oauth._storage import Clock, RecordStorage, redirect_uri, settings_of
from nexus_gateway.upstreams.oauth.store import SignInStore, record_key

logger = logging.getLogger(__name__)

REFRESH_AHEAD = 60.0
"""Refresh a token this many seconds before it expires (at most half its lifetime)."""
_LOCK_WAIT = 30.0
_STORE_POLL = 2.0
"""How often an upstream waiting for a sign-in looks at the store (a sign-in made by another process)."""


class AuthorizationRequired(Exception):
    """The server wants a sign-in that needs a person (raised inside a request of the running gateway)."""


class Interaction(Protocol):
    """How a person signs in: shown the authorization URL, then the redirect comes back (signin.py)."""

    async def show(self, url: str) -> None: ...

    async def redirected(self) -> AuthorizationCodeResult: ...


def wants_oauth(spec: RemoteServer) -> bool:
    """Whether the gateway signs in to this server when asked: not when turned off, nor when the config already
    sends an `Authorization` header of its own."""
    if spec.oauth is not None and not spec.oauth.enabled:
        return False
    return not any(name.lower() == "authorization" for name in spec.headers)


class _Context(OAuthContext):
    """The SDK's context, with the token's expiry taken from our clock and kept with the token."""

    clock: Clock | None = None
    lifetime: float | None = None

    def _now(self) -> float:
        return self.clock.now() if self.clock is not None else time.time()

    def update_token_expiry(self, token: OAuthToken) -> None:
        self.lifetime = float(token.expires_in) if token.expires_in is not None else None
        self.token_expiry_time = self._now() + int(token.expires_in) if token.expires_in is not None else None

    def is_token_valid(self) -> bool:
        return bool(
            self.current_tokens
            and self.current_tokens.access_token
            and (self.token_expiry_time is None or self._now() <= self.token_expiry_time)
        )


class UpstreamAuth(OAuthClientProvider):
    """OAuth for one remote upstream. `interaction`: how a person signs in (`auth login`, the dashboard, a URL
    elicitation); None in the running gateway, which never opens a browser itself. `fresh`: ignore the stored
    tokens (a sign-in asked for again)."""

    context: _Context

    def __init__(
        self,
        name: str,
        spec: RemoteServer,
        store: SignInStore,
        *,
        lock_dir: Path | None,
        sign_in_command: str,
        interaction: Interaction | None = None,
        fresh: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        settings = settings_of(spec)
        self.name = name
        self.sign_in_command = sign_in_command
        self.required: str | None = None
        """Why the server cannot be reached without a person signing in, when it cannot."""
        self.clock = Clock(clock)
        self.storage = RecordStorage(store, name, spec, self.clock)
        self.interaction = interaction
        self._fresh = fresh
        self._configured_scope = " ".join(settings.scopes) or None
        self._lock_path = lock_dir / f"{record_key(name, spec.url)}.lock" if lock_dir is not None else None
        self._refused_refresh: str | None = None
        self._rejected: str | None = None
        """The access token the server refused when a sign-in became required (a new one ends the wait)."""
        self._signed_in = anyio.Event()
        self._looked = 0.0
        self._challenged_once = False
        metadata = OAuthClientMetadata(
            client_name="nexus-gateway",
            redirect_uris=[AnyUrl(redirect_uri(settings))],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
            scope=self._configured_scope,
        )
        super().__init__(
            spec.url,
            metadata,
            self.storage,
            redirect_handler=self._redirect,
            callback_handler=self._callback,
            client_metadata_url=settings.client_metadata_url,
        )
        self.context = _Context(
            server_url=spec.url,
            client_metadata=metadata,
            storage=self.storage,
            redirect_handler=self._redirect,
            callback_handler=self._callback,
            client_metadata_url=settings.client_metadata_url,
        )
        self.context.clock = self.clock
        _quiet_sdk_logs()

    # -- what the gateway asks of it -------------------------------------------------------------

    def needs_sign_in(self) -> str:
        """What a user is told when the upstream needs a sign-in: why, and what to run."""
        why = self.required or "it asks for a sign-in"
        return f"Upstream server {self.name!r} needs authorization ({why}). Sign in with: {self.sign_in_command}"

    async def wait_signed_in(self) -> None:
        """Return once a sign-in newer than the one that was refused is in the store."""
        while True:
            token = self.storage.tokens_of(self.storage.record())
            if token is not None and token.access_token != self._rejected:
                self.required = None
                self._rejected = None
                self._initialized = False  # read the new sign-in on the next request
                return
            with anyio.move_on_after(_STORE_POLL):
                await self._signed_in.wait()
            self._signed_in = anyio.Event()

    def signed_in(self) -> None:
        """Another provider of this process has just stored a sign-in (wakes `wait_signed_in` at once)."""
        self._signed_in.set()

    # -- the SDK's hooks ---------------------------------------------------------------------------

    async def _redirect(self, url: str) -> None:
        if self.interaction is None:
            if self.required is None:
                self.required = "the server asks for a sign-in"
            self._rejected = self.context.current_tokens.access_token if self.context.current_tokens else None
            self.storage.forget_tokens(self.required, wanted_scope=self.context.client_metadata.scope)
            raise AuthorizationRequired(self.needs_sign_in())
        await self.interaction.show(url)

    async def _callback(self) -> AuthorizationCodeResult:
        assert self.interaction is not None  # `_redirect` raised otherwise
        return await self.interaction.redirected()

    async def _initialize(self) -> None:
        record = self.storage.record()
        self.context.current_tokens = None if self._fresh else self.storage.tokens_of(record)
        self.context.token_expiry_time = None if self._fresh else record.expires_at
        self.context.lifetime = None
        if self.context.current_tokens is not None and self.context.current_tokens.expires_in is not None:
            self.context.lifetime = float(self.context.current_tokens.expires_in)
        self.context.client_info = await self.storage.get_client_info()
        self._initialized = True

    async def _perform_authorization(self) -> httpx2.Request:
        """The configured scopes, and those the server asked for when the running gateway had to stop (a step-up's:
        the challenge a sign-in meets, at connecting, names only the first ones), asked for besides."""
        scope = union_scopes(self.context.client_metadata.scope, self._configured_scope)
        self.context.client_metadata.scope = union_scopes(scope, self.storage.wanted_scope())
        return await super()._perform_authorization()

    async def _handle_refresh_response(self, response: httpx2.Response) -> bool:
        used = self.context.current_tokens.refresh_token if self.context.current_tokens else None
        renewed = await super()._handle_refresh_response(response)
        if not renewed:
            error = await _oauth_error(response)
            self.required = f"the authorization server refused to renew the sign-in: {error}"
            self._refused_refresh = used
            self.storage.forget_tokens(self.required, unless_renewed_from=used)
        return renewed

    # -- the flow --------------------------------------------------------------------------------

    def _due(self) -> bool:
        """Whether the token should be refreshed before it is sent (it expires within the refresh margin)."""
        context = self.context
        if not context.can_refresh_token() or context.token_expiry_time is None:
            return False
        margin = REFRESH_AHEAD if context.lifetime is None else min(REFRESH_AHEAD, context.lifetime / 2)
        return self.clock.now() >= context.token_expiry_time - margin

    def _adopt_stored(self) -> bool:
        """Take the stored sign-in when another process has renewed it; whether it did."""
        record = self.storage.record()
        stored = self.storage.tokens_of(record)
        current = self.context.current_tokens
        if stored is None or (current is not None and stored.access_token == current.access_token):
            return False
        self.context.current_tokens = stored
        self.context.token_expiry_time = record.expires_at
        self.context.lifetime = float(stored.expires_in) if stored.expires_in is not None else None
        return True

    def _signed_out(self) -> bool:
        """Whether the sign-in this provider holds was removed from the store (`auth logout`); looked at every few
        seconds at most. Then the tokens are dropped and the server's next 401 makes a sign-in required."""
        now = self.clock.now()
        if self.context.current_tokens is None or now - self._looked < _STORE_POLL:
            return False
        self._looked = now
        record = self.storage.store.load(self.name, self.storage.url)
        if record is not None and record.tokens is not None:
            return False
        self.context.clear_tokens()
        self.context.client_info = None if record is None else self.context.client_info
        self.required = "the sign-in was removed (auth logout)" if record is None else (record.needs or None)
        return True

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        answered: httpx2.Response | None = None
        if not self._initialized:
            if not self._challenged_once:
                # Until a server has asked for OAuth, its requests go out as they are and the store is left alone
                # (a locked OS keyring would otherwise ask to be unlocked for servers that never sign in).
                answered = yield request
                if not _challenged(answered):
                    return
                self._challenged_once = True
            async with self.context.lock:
                if not self._initialized:
                    await self._initialize()
        self._signed_out()
        if self._due():
            async with self.context.lock, self._process_lock():  # one refresh at a time per upstream
                if not self._adopt_stored() and self._due():
                    response = yield await self._refresh_token()
                    await self._handle_refresh_response(response)
        if self.context.is_token_valid():
            self._add_auth_header(request)
            answered = yield request
            if not _challenged(answered):
                return
            if answered.status_code == 401 and self.context.can_refresh_token():
                # Refused before its time (revoked, or the clocks disagree): renew it once and try again.
                sent = self.context.current_tokens.access_token if self.context.current_tokens else None
                async with self.context.lock, self._process_lock():
                    current = self.context.current_tokens
                    if not self._adopt_stored() and current is not None and current.access_token == sent:
                        response = yield await self._refresh_token()
                        await self._handle_refresh_response(response)
                current = self.context.current_tokens
                if current is not None and current.access_token != sent and self.context.is_token_valid():
                    self._add_auth_header(request)
                    answered = yield request
                    if not _challenged(answered):
                        return
        # The SDK's flow: discovery, registration, authorization. Its first request is `request` itself when it has
        # nothing to refresh: it is given the answer already in hand instead of sending it again.
        inner = super()._auth_flow(request)
        try:
            outgoing = await inner.__anext__()
            if outgoing is request and answered is not None:
                outgoing = await inner.asend(answered)
            while True:
                response = yield outgoing
                outgoing = await inner.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await inner.aclose()

    @contextlib.asynccontextmanager
    async def _process_lock(self) -> AsyncIterator[None]:
        """An exclusive lock on this upstream's lock file, waited for up to `_LOCK_WAIT` (then refresh anyway), and
        the store's own across replicas when it has one (Redis: redis_store.py)."""
        shared = getattr(self.storage.store, "refresh_lock", None)
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(self._file_lock())
            if shared is not None:
                await stack.enter_async_context(shared(self.name, self.storage.url, wait=_LOCK_WAIT))
            yield

    @contextlib.asynccontextmanager
    async def _file_lock(self) -> AsyncIterator[None]:
        if self._lock_path is None or sys.platform == "win32":
            yield
            return
        import fcntl

        self._lock_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            with anyio.move_on_after(_LOCK_WAIT):
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        await anyio.sleep(0.05)
            yield
        finally:
            os.close(fd)  # releases the lock


def _challenged(response: httpx2.Response) -> bool:
    """Whether the server refused the request's authorization (401, or 403 asking for more scope)."""
    if response.status_code == 401:
        return True
    return response.status_code == 403 and extract_field_from_www_auth(response, "error") == "insufficient_scope"


async def _oauth_error(response: httpx2.Response) -> str:
    """An OAuth error response in words: its status and `error` code (never its body beyond that)."""
    code: Any = None
    with contextlib.suppress(Exception):
        await response.aread()
        code = response.json().get("error")
    return f"HTTP {response.status_code}" + (f" {code}" if isinstance(code, str) and code.isascii() else "")


class _DropAuthorizationRequired(logging.Filter):
    """The SDK logs every exception of its flow with a traceback; a sign-in that needs a person is no error."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], AuthorizationRequired))


_FILTER = _DropAuthorizationRequired()


def _quiet_sdk_logs() -> None:
    sdk = logging.getLogger("mcp.client.auth.oauth2")
    if _FILTER not in sdk.filters:
        sdk.addFilter(_FILTER)
