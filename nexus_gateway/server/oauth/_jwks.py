"""An issuer's signing keys (JWKS), fetched with httpx and cached, for the resource server (verifier.py).

    issuer --(RFC 8414 / OpenID metadata, when no jwks_uri is configured)--> jwks_uri --> JWKS --> key by `kid`

Keys are kept `max_age` seconds. A token signed by a `kid` the cache does not hold makes one fresh fetch
(the issuer may have rotated its keys), at most once every `min_refresh` seconds, so a flood of made-up
`kid`s cannot turn into a flood of fetches. A failed fetch is remembered for `min_refresh` seconds too.
When the keys cannot be fetched and the cached ones are too old or do not hold the `kid`, `KeysUnavailable`
is raised: the caller refuses the request (fail closed), it never lets a token through unverified.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx
from jwt import PyJWK, PyJWKSet
from jwt.exceptions import PyJWKError, PyJWKSetError

logger = logging.getLogger(__name__)

MAX_DOCUMENT_BYTES = 512 * 1024
"""The largest metadata or JWKS document read; an issuer's are a few kilobytes."""


class KeysUnavailable(Exception):
    """The issuer's keys could not be fetched (or its metadata names none): no token can be checked now."""


class UnknownKey(Exception):
    """The issuer's current keys hold no key for this token."""


@dataclass(frozen=True)
class SigningKey:
    """One of the issuer's keys, and the algorithm its JWK is bound to (`alg`), if it names one."""

    jwk: PyJWK
    algorithm: str | None

    def for_algorithm(self, algorithm: str) -> Any:
        """What `jwt.decode` verifies a token of `algorithm` with: the JWK itself when it names its
        algorithm (PyJWT then refuses any other), else its public key (any `algorithm` of its key type)."""
        return self.jwk if self.algorithm is not None else self.jwk.key


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be, in the order the MCP authorization spec tries them: RFC 8414 with
    path insertion, OpenID Connect with path insertion, then OpenID Connect appended to the issuer."""
    parts = urlsplit(issuer)
    origin, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    urls = [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}/.well-known/openid-configuration{path}",
    ]
    if path:
        urls.append(f"{origin}{path}/.well-known/openid-configuration")
    return urls


def same_issuer(a: str, b: str) -> bool:
    """Issuer identifiers compare exactly, but for the trailing slash of a root URL (`https://as` vs `https://as/`)."""
    return a == b or a.rstrip("/") == b.rstrip("/")


class JwksCache:
    """The keys of one issuer (see the module doc)."""

    def __init__(
        self,
        issuer: str,
        jwks_uri: str | None = None,
        *,
        max_age: float = 300.0,
        min_refresh: float = 10.0,
        timeout: float = 5.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.issuer = issuer
        self._configured_uri = jwks_uri
        self._jwks_uri = jwks_uri
        self.max_age, self.min_refresh, self.timeout = max_age, min_refresh, timeout
        self._transport = transport
        self._keys: dict[str | None, SigningKey] = {}
        self._fetched_at: float | None = None
        self._attempted_at: float | None = None
        self._failed = False
        self._lock = anyio.Lock()
        self.fetches = 0
        """JWKS documents fetched so far (read by tests and the threat model's rate-limit line)."""

    async def key(self, kid: str | None) -> SigningKey:
        """The key that signs tokens with header `kid` (a token without one: the issuer's only key)."""
        if self._fetched_at is None or time.monotonic() - self._fetched_at > self.max_age:
            await self._refresh(stale=self._fetched_at)
        found = self._find(kid)
        if found is None:
            await self._refresh(stale=self._fetched_at)
            found = self._find(kid)
        if found is None:
            raise UnknownKey(f"the issuer publishes no key {kid!r}" if kid else "the token names no key ('kid')")
        return found

    def _find(self, kid: str | None) -> SigningKey | None:
        if kid is None:
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid)

    async def _refresh(self, *, stale: float | None) -> None:
        """Fetch the keys, unless another task did since `stale` was read, or a fetch was tried less than
        `min_refresh` seconds ago: then the keys stand as they are if it succeeded, and `KeysUnavailable`
        is raised if it failed."""
        async with self._lock:
            if self._fetched_at != stale:
                return  # another request refreshed them while this one waited
            now = time.monotonic()
            if self._attempted_at is not None and now - self._attempted_at < self.min_refresh:
                if self._failed:
                    raise KeysUnavailable("the issuer's keys could not be fetched a moment ago")
                return
            self._attempted_at = now
            try:
                self._keys = await self._fetch()
            except KeysUnavailable:
                self._failed = True
                raise
            self._failed = False
            self._fetched_at = time.monotonic()

    async def _fetch(self) -> dict[str | None, SigningKey]:
        async with httpx.AsyncClient(timeout=self.timeout, transport=self._transport) as client:
            uri = self._jwks_uri or await self._discover(client)
            try:
                document = await _get_json(client, uri)
                usable = [key for key in document.get("keys", []) if isinstance(key, dict) and key.get("use") != "enc"]
                keys = PyJWKSet.from_dict({"keys": usable}).keys
                declared = {key.get("kid"): key.get("alg") for key in usable}
            except (KeysUnavailable, PyJWKError, PyJWKSetError, AttributeError) as exc:
                if self._configured_uri is None:
                    self._jwks_uri = None  # discover again next time: the metadata may have moved it
                raise KeysUnavailable(f"cannot read the issuer's keys at {uri}: {exc}") from exc
        self.fetches += 1
        self._jwks_uri = uri
        logger.info("oauth: %d signing key(s) of %s read from %s", len(keys), self.issuer, uri)
        return {key.key_id: SigningKey(key, declared.get(key.key_id)) for key in keys}

    async def _discover(self, client: httpx.AsyncClient) -> str:
        problems = []
        for url in metadata_urls(self.issuer):
            try:
                metadata = await _get_json(client, url)
            except KeysUnavailable as exc:
                problems.append(str(exc))
                continue
            if not same_issuer(str(metadata.get("issuer", "")), self.issuer):
                # RFC 8414 section 3.3: metadata naming another issuer is not this issuer's
                problems.append(f"{url} names issuer {metadata.get('issuer')!r}, not {self.issuer!r}")
                continue
            uri = metadata.get("jwks_uri")
            if isinstance(uri, str) and uri.startswith(("https://", "http://")):
                return uri
            problems.append(f"{url} names no jwks_uri")
        raise KeysUnavailable(f"no metadata of issuer {self.issuer} names its keys ({'; '.join(problems)})")


async def _get_json(client: httpx.AsyncClient, url: str) -> dict[str, Any]:
    try:
        async with client.stream("GET", url, headers={"Accept": "application/json"}) as response:
            if response.status_code != 200:
                raise KeysUnavailable(f"{url} answered HTTP {response.status_code}")
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise KeysUnavailable(f"{url} sent more than {MAX_DOCUMENT_BYTES} bytes")
    except httpx.HTTPError as exc:
        raise KeysUnavailable(f"cannot reach {url} ({type(exc).__name__})") from exc
    try:
        document = json.loads(body)
    except ValueError as exc:
        raise KeysUnavailable(f"{url} sent no JSON") from exc
    if not isinstance(document, dict):
        raise KeysUnavailable(f"{url} sent no JSON object")
    return document
