"""A real OAuth 2.1 authorization server for tests, on loopback: the official SDK's authorization-server
routes (`mcp.server.auth`: /authorize, /token, /register, with PKCE and RFC 8707 `resource`) over a
provider that approves every request and issues RS256 JWT access tokens (RFC 9068, PyJWT), plus RFC 8414
metadata naming its `jwks_uri` and the JWKS itself. `mint` makes a token directly, for the refusals."""

from __future__ import annotations

import secrets
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

SCOPE = "mcp:tools"


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class Issuer:
    """The authorization server (see the module doc); `url` is its issuer identifier once started."""

    def __init__(self, *, subject: str = "alice", claims: dict[str, Any] | None = None) -> None:
        self.url = ""
        self.subject = subject
        self.claims = claims or {}
        """Extra claims put in the tokens the sign-in flow issues (e.g. groups)."""
        self.keys = {"k1": _key()}
        self.rogue = _key()
        """A key the issuer never publishes (a forged signature)."""
        self.jwks_up = True
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.issued: list[str] = []
        """Resources (`aud`) of the tokens the sign-in flow issued."""
        self.minted: list[str] = []

    # -- tokens --
    def mint(self, *, key: str = "k1", signer: rsa.RSAPrivateKey | None = None, **claims: Any) -> str:
        """A JWT access token of this issuer; claims given override the defaults (None removes one)."""
        now = int(time.time())
        body = {"iss": self.url, "sub": self.subject, "iat": now, "exp": now + 300, "scope": SCOPE, "client_id": "c"}
        body.update(claims)
        body = {name: value for name, value in body.items() if value is not None}
        token = jwt.encode(body, signer or self.keys[key], algorithm="RS256", headers={"kid": key, "typ": "at+jwt"})
        self.minted.append(token)
        return token

    def rotate(self, kid: str) -> None:
        self.keys[kid] = _key()

    # -- the app --
    def app(self) -> Starlette:
        provider = _Provider(self)
        routes = [
            Route("/.well-known/oauth-authorization-server", self._metadata),
            Route("/jwks", self._jwks),
            *create_auth_routes(
                provider,  # type: ignore[arg-type]
                AnyHttpUrl(self.url),
                client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=[SCOPE]),
            ),
        ]
        return Starlette(routes=routes)

    async def _metadata(self, request: Request) -> Response:
        return JSONResponse(
            {
                "issuer": self.url,
                "authorization_endpoint": f"{self.url}/authorize",
                "token_endpoint": f"{self.url}/token",
                "registration_endpoint": f"{self.url}/register",
                "jwks_uri": f"{self.url}/jwks",
                "scopes_supported": [SCOPE],
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
                "code_challenge_methods_supported": ["S256"],
            }
        )

    async def _jwks(self, request: Request) -> Response:
        if not self.jwks_up:
            return JSONResponse({"error": "down"}, status_code=503)
        keys = []
        for kid, key in self.keys.items():
            jwk = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
            keys.append({**jwk, "kid": kid, "use": "sig", "alg": "RS256"})
        return JSONResponse({"keys": keys})

    @contextmanager
    def serving(self) -> Iterator[Issuer]:
        """Serve on a free loopback port (in a thread) for the `with` block."""
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)  # connections queue from here on: no wait for the server to start
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        server = uvicorn.Server(uvicorn.Config(self.app(), log_level="warning", lifespan="off", ws="none"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            server.should_exit = True
            thread.join(10)
            sock.close()


class _Provider:
    """`OAuthAuthorizationServerProvider`: every client is approved at once, as if its user clicked 'allow'."""

    def __init__(self, issuer: Issuer) -> None:
        self.issuer = issuer

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.issuer.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.issuer.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(16)
        self.issuer.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [SCOPE],
            expires_at=time.time() + 60,
            client_id=client.client_id or "",
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        return self.issuer.codes.get(code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, code: AuthorizationCode
    ) -> OAuthToken:
        self.issuer.codes.pop(code.code, None)
        self.issuer.issued.append(code.resource or "")
        claims = {"aud": code.resource, "scope": " ".join(code.scopes), "client_id": client.client_id}
        token = self.issuer.mint(**{**claims, **self.issuer.claims})
        return OAuthToken(access_token=token, token_type="Bearer", expires_in=300, scope=" ".join(code.scopes))

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return None

    async def exchange_refresh_token(self, *args: Any) -> OAuthToken:
        raise NotImplementedError

    async def load_access_token(self, token: str) -> AccessToken | None:
        return None

    async def revoke_token(self, token: Any) -> None:
        return None
