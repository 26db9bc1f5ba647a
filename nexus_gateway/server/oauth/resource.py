"""The resource server: RFC 9728 metadata, the bearer check of a request, and RFC 6750 challenges
(the package's doc draws the flow)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.routes import build_resource_metadata_url
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from nexus_gateway.config import OAuthSettings
from nexus_gateway.server._clients import split_profile_path
from nexus_gateway.server.oauth.verifier import JwtVerifier, TokenRejected, TokenVerifier, VerifierUnavailable

logger = logging.getLogger(__name__)

METADATA_PATH = "/.well-known/oauth-protected-resource"
MCP_ENDPOINTS = ("mcp", "sse", "messages")
"""What an OAuth token reaches, at the root or under `/p/NAME/`: the MCP transports, nothing gateway-wide."""
RETRY_AFTER = 10


@dataclass(frozen=True)
class Grant:
    """What an accepted token gives a request: its principal, and the profile its claims chose."""

    token: AccessToken
    profile: str | None


class Refusal(Exception):
    """A token or its absence refused, as the HTTP response to send."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status_code)
        self.response = response


def scopes_of(claims: dict[str, Any]) -> list[str]:
    """The scopes a token carries: `scope` (RFC 9068, space-separated) or `scp` (a list, or a string)."""
    raw = claims.get("scope", claims.get("scp"))
    if isinstance(raw, str):
        return raw.split()
    return [str(item) for item in raw] if isinstance(raw, list) else []


def claim_value(claims: dict[str, Any], path: str) -> Any:
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _holds(value: Any, wanted: str, claim: str) -> bool:
    if isinstance(value, str):
        return value == wanted or (claim in ("scope", "scp") and wanted in value.split())
    if isinstance(value, list):
        return wanted in [str(item) for item in value]
    return value is not None and str(value).lower() == wanted.lower()


class ResourceServer:
    """The metadata routes and the token check of `nexus.oauth` (see the module doc)."""

    def __init__(
        self, oauth: OAuthSettings, profiles: Callable[[], Collection[str]], verifier: TokenVerifier | None = None
    ) -> None:
        self.oauth = oauth
        self.profiles = profiles
        """The configured profiles' names (read on each request: a reloaded config's count at once)."""
        self.verifier: TokenVerifier = verifier or JwtVerifier(oauth)

    # -- where this gateway is --
    def base(self, scope: Scope) -> str:
        """This gateway's resource identifier: `audience`, or the origin the request came to."""
        if self.oauth.audience:
            return self.oauth.audience.rstrip("/")
        host = next((value.decode("latin-1") for name, value in scope.get("headers", []) if name == b"host"), "")
        return f"{scope.get('scheme', 'http')}://{host}"

    def resource(self, scope: Scope) -> str:
        """The resource a request reaches: the gateway, or `/p/NAME/mcp` (`/sse`) of a profile path."""
        name, rest = split_profile_path(scope["path"])
        if name is None:
            return self.base(scope)
        endpoint = "mcp" if rest.startswith("/mcp") else "sse"
        return f"{self.base(scope)}/p/{name}/{endpoint}"

    def audiences(self, scope: Scope) -> list[str]:
        """What `aud` may name here: the gateway; on `/p/NAME/...` also that profile's resources."""
        base = self.base(scope)
        name, _ = split_profile_path(scope["path"])
        if name is None:
            return [base]
        return [base, *(f"{base}/p/{name}{suffix}" for suffix in ("", "/mcp", "/sse"))]

    def metadata_url(self, scope: Scope) -> str:
        return str(build_resource_metadata_url(AnyHttpUrl(self.resource(scope))))

    # -- the check --
    async def authenticate(self, scope: Scope, authorization: bytes | None) -> Grant:
        """The grant of the request's bearer token; `Refusal` when it has none or it is not valid here."""
        scheme, _, token = (authorization or b"").decode("latin-1").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Refusal(self.challenge(scope, 401, None, "Send 'Authorization: Bearer <access token>'."))
        try:
            claims = await self.verifier.verify(token.strip(), self.audiences(scope))
        except TokenRejected as exc:
            logger.debug("oauth: refused a token on %s: %s", scope["path"], exc)
            raise Refusal(
                self.challenge(scope, 401, "invalid_token", f"{str(exc)[:1].upper()}{str(exc)[1:]}.")
            ) from None
        except VerifierUnavailable as exc:
            logger.warning("oauth: cannot check tokens now, refusing (%s)", exc)
            body = {"error": "temporarily_unavailable", "message": f"Cannot check access tokens now: {exc}."}
            raise Refusal(JSONResponse(body, status_code=503, headers={"Retry-After": str(RETRY_AFTER)})) from None
        granted = scopes_of(claims)
        missing = [name for name in self.oauth.required_scopes if name not in granted]
        if missing:
            description = f"The token lacks the scope {' '.join(missing)}."
            raise Refusal(self.challenge(scope, 403, "insufficient_scope", description))
        subject = claims.get("sub") if isinstance(claims.get("sub"), str) else None
        client = claims.get("client_id", claims.get("azp"))
        principal = subject or (client if isinstance(client, str) else "-")
        access = AccessToken(
            token="",
            client_id=f"oauth:{principal}",
            scopes=granted,
            expires_at=int(claims["exp"]),
            resource=self.resource(scope),
            subject=subject,
            claims={"iss": claims.get("iss")},
        )
        return Grant(access, self.profile_of(claims))

    async def admit(self, scope: Scope, receive: Receive, send: Send, authorization: bytes | None) -> Grant | None:
        """`authenticate`, its refusal sent as the response (then None)."""
        try:
            return await self.authenticate(scope, authorization)
        except Refusal as refusal:
            await refusal.response(scope, receive, send)
            return None

    def profile_of(self, claims: dict[str, Any]) -> str | None:
        """The profile the token's claims choose: the first matching rule's, else `default_profile`."""
        for rule in self.oauth.profiles:
            if _holds(claim_value(claims, rule.claim), rule.value, rule.claim):
                return rule.profile
        return self.oauth.default_profile

    def challenge(self, scope: Scope, status: int, error: str | None, description: str) -> Response:
        """A 401 or 403 with the RFC 6750 / RFC 9728 `WWW-Authenticate` header the MCP spec asks for."""
        parts = [f'resource_metadata="{self.metadata_url(scope)}"']
        if self.oauth.required_scopes:
            parts.append(f'scope="{" ".join(self.oauth.required_scopes)}"')
        if error is not None:
            parts[:0] = [f'error="{error}"', f'error_description="{description.replace(chr(34), chr(39))}"']
        body = {"error": error or "unauthorized", "message": description}
        return JSONResponse(body, status_code=status, headers={"WWW-Authenticate": "Bearer " + ", ".join(parts)})

    def refused_path(self, path: str) -> bool:
        """Whether an OAuth token is refused on `path`: anything but the MCP transports."""
        _, rest = split_profile_path(path)
        first = rest.strip("/").split("/", 1)[0]
        return first not in MCP_ENDPOINTS

    # -- RFC 9728 metadata --
    @staticmethod
    def is_metadata_path(path: str) -> bool:
        """The metadata a client reads to learn how to sign in: served without a token."""
        return path == METADATA_PATH or path.startswith(f"{METADATA_PATH}/")

    def routes(self) -> list[Route]:
        return [
            Route(METADATA_PATH, endpoint=self._metadata, methods=["GET"]),
            Route(f"{METADATA_PATH}/p/{{name}}/{{endpoint}}", endpoint=self._metadata, methods=["GET"]),
        ]

    async def _metadata(self, request: Request) -> Response:
        name, endpoint = request.path_params.get("name"), request.path_params.get("endpoint")
        base = self.base(request.scope)
        if name is not None and (name not in self.profiles() or endpoint not in ("mcp", "sse")):
            message = f"No protected resource /p/{name}/{endpoint} here (nexus.profiles; endpoints mcp and sse)."
            return JSONResponse({"error": "not_found", "message": message}, status_code=404)
        resource = base if name is None else f"{base}/p/{name}/{endpoint}"
        metadata = ProtectedResourceMetadata.model_validate(  # from text: each URL kept as written (issuer ids)
            {
                "resource": resource,
                "authorization_servers": self.oauth.authorization_servers or [self.oauth.issuer],
                "scopes_supported": self.oauth.required_scopes or None,
                "resource_name": "nexus-gateway" if name is None else f"nexus-gateway profile {name}",
            }
        )
        return JSONResponse(
            metadata.model_dump(mode="json", exclude_none=True), headers={"Cache-Control": "public, max-age=3600"}
        )
