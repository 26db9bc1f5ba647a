"""Checking a JWT access token (RFC 9068) against its issuer's keys, behind the `TokenVerifier` Protocol."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol
from urllib.parse import urlsplit

import jwt

from nexus_gateway.config import OAuthSettings
from nexus_gateway.server.oauth._jwks import JwksCache, KeysUnavailable, UnknownKey


class TokenRejected(Exception):
    """The token is not valid here (401 `invalid_token`); the message says why, without the token."""


class VerifierUnavailable(Exception):
    """The token cannot be checked now (the issuer's keys are out of reach): 503, never let through."""


class TokenVerifier(Protocol):
    """Checks an access token; `audiences` are the resource identifiers `aud` may name for this request."""

    async def verify(self, token: str, audiences: Sequence[str]) -> dict[str, Any]:
        """The token's claims; raises `TokenRejected` or `VerifierUnavailable`."""
        ...


def _normal(url: str) -> str:
    """A resource identifier compared as a URL: scheme and host lowercase, no trailing slash."""
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path}".rstrip("/")


class JwtVerifier:
    """JWT access tokens (RFC 9068) signed by `settings.issuer`'s keys, checked with PyJWT."""

    def __init__(self, settings: OAuthSettings, keys: JwksCache | None = None) -> None:
        self.settings = settings
        self.keys = keys or JwksCache(settings.issuer, settings.jwks_uri)
        issuer = settings.issuer
        self._issuers = [issuer, issuer.rstrip("/")] if issuer.endswith("/") else [issuer, f"{issuer}/"]

    async def verify(self, token: str, audiences: Sequence[str]) -> dict[str, Any]:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise TokenRejected("the token is not a JWT") from None
        algorithm = header.get("alg")
        if algorithm not in self.settings.algorithms:
            raise TokenRejected(f"the token's algorithm {algorithm!r} is not accepted")
        kid = header.get("kid")
        try:
            key = await self.keys.key(kid if isinstance(kid, str) else None)
        except UnknownKey as exc:
            raise TokenRejected(f"the token is not signed by the issuer ({exc})") from None
        except KeysUnavailable as exc:
            raise VerifierUnavailable(str(exc)) from None
        try:
            claims = jwt.decode(
                token,
                key.for_algorithm(algorithm),
                algorithms=[algorithm],
                issuer=self._issuers,
                leeway=self.settings.leeway,
                options={"require": ["exp", "iss", "aud"], "verify_aud": False},
            )
        except jwt.ExpiredSignatureError:
            raise TokenRejected("the token has expired") from None
        except jwt.InvalidSignatureError:
            raise TokenRejected("the token's signature does not verify") from None
        except jwt.InvalidIssuerError:
            raise TokenRejected(f"the token was not issued by {self.settings.issuer}") from None
        except (jwt.PyJWTError, ValueError, TypeError) as exc:
            raise TokenRejected(f"the token is not valid ({exc})") from None
        named = claims.get("aud")
        named = [named] if isinstance(named, str) else named if isinstance(named, list) else []
        wanted = {_normal(audience) for audience in audiences}
        if not any(isinstance(audience, str) and _normal(audience) in wanted for audience in named):
            raise TokenRejected(f"the token is for another resource (aud); this one is {audiences[0]}")
        return claims
