"""A real OAuth 2.1 authorization server and an MCP server it protects, on one loopback port, for tests.

The authorization server is authlib's (`authlib.oauth2.AuthorizationServer` with its authorization-code grant,
PKCE S256 required, rotating refresh tokens, RFC 7591 dynamic registration, RFC 7009 revocation, RFC 9207 `iss`),
behind a thin Starlette adapter; the resource is the SDK's `MCPServer` over streamable HTTP with its bearer
middleware (401 + `WWW-Authenticate: Bearer resource_metadata=...`, RFC 9728 metadata), checking each token against
the authorization server's records: issued here, not revoked, not expired, bound (RFC 8707) to this resource.

The one user approves every request (the consent screen is not what is tested): a GET of the authorization URL
answers with the redirect to the client's `redirect_uri`, which is what a browser would follow.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import anyio
import uvicorn
from authlib.oauth2 import AuthorizationServer as _AuthlibServer
from authlib.oauth2.rfc6749 import (
    AuthorizationCodeMixin,
    ClientMixin,
    JsonPayload,
    JsonRequest,
    OAuth2Payload,
    OAuth2Request,
    TokenMixin,
    grants,
)
from authlib.oauth2.rfc6750 import BearerTokenGenerator
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc9207 import IssuerParameter
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

SCOPE = "mcp"
ADMIN = "admin"
"""The scope the `admin_only` tool needs beyond `mcp`: a call without it is a step-up (403 insufficient_scope)."""
USER = "ada"


@dataclass
class Client(ClientMixin):
    client_id: str
    client_secret: str | None
    redirect_uris: list[str]
    auth_method: str = "none"
    grant_types: list[str] = field(default_factory=lambda: ["authorization_code", "refresh_token"])

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str:
        return self.redirect_uris[0]

    def get_allowed_scope(self, scope: str) -> str:
        return " ".join(part for part in (scope or "").split() if part in (SCOPE, ADMIN))

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in self.redirect_uris

    def check_client_secret(self, client_secret: str) -> bool:
        return self.client_secret is not None and secrets.compare_digest(self.client_secret, client_secret)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return endpoint != "token" or method == self.auth_method

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in self.grant_types


@dataclass
class Code(AuthorizationCodeMixin):
    code: str
    client_id: str
    redirect_uri: str
    scope: str
    resource: str | None
    code_challenge: str | None
    code_challenge_method: str | None

    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope

    def get_nonce(self) -> None:
        return None

    def get_auth_time(self) -> None:
        return None

    def get_acr(self) -> None:
        return None

    def get_amr(self) -> None:
        return None


@dataclass
class Token(TokenMixin):
    client_id: str
    access_token: str
    refresh_token: str | None
    scope: str
    resource: str | None
    expires_at: float
    revoked: bool = False
    refresh_revoked: bool = False

    def check_client(self, client: ClientMixin) -> bool:
        return client.get_client_id() == self.client_id

    def get_scope(self) -> str:
        return self.scope

    def get_expires_in(self) -> int:
        return int(self.expires_at - time.time())

    def is_expired(self) -> bool:
        return time.time() >= self.expires_at

    def is_revoked(self) -> bool:
        return self.revoked

    def get_user(self) -> str:
        return USER

    def get_client(self) -> None:
        return None


class _Payload(OAuth2Payload):
    def __init__(self, data: dict[str, str], datalist: dict[str, list[str]]) -> None:
        self._data = data
        self._datalist = datalist

    @property
    def data(self) -> dict[str, str]:
        return self._data

    @property
    def datalist(self) -> Any:
        return self._datalist


class _Request(OAuth2Request):
    """An OAuth request as authlib reads it, from a Starlette request whose body was read beforehand."""

    def __init__(self, request: Request, form: list[tuple[str, str]]) -> None:
        super().__init__(request.method, str(request.url), headers=request.headers)
        pairs = list(request.query_params.multi_items()) + form
        datalist: dict[str, list[str]] = {}
        for key, value in pairs:
            datalist.setdefault(key, []).append(value)
        self.payload = _Payload({key: values[0] for key, values in datalist.items()}, datalist)
        self._args = dict(request.query_params)
        self._form = dict(form)

    @property
    def args(self) -> dict[str, str]:
        return self._args

    @property
    def form(self) -> dict[str, str]:
        return self._form


class _Json(JsonPayload):
    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    @property
    def data(self) -> dict[str, Any]:
        return self._data


@dataclass
class _Reply:
    status: int
    body: Any
    headers: list[tuple[str, str]]

    @property
    def location(self) -> str | None:
        return dict(self.headers).get("Location")

    @location.setter
    def location(self, value: str) -> None:
        self.headers = [(k, v) for k, v in self.headers if k != "Location"] + [("Location", value)]

    def starlette(self) -> Response:
        headers = {key: value for key, value in self.headers if key.lower() != "content-type"}
        if self.location is not None and 300 <= self.status < 400:
            return RedirectResponse(self.location, status_code=self.status, headers=headers)
        body = self.body if isinstance(self.body, str) else json.dumps(self.body)
        return Response(body, status_code=self.status, headers=headers, media_type="application/json")


class _Issuer(IssuerParameter):
    def __init__(self, issuer: str) -> None:
        self._issuer = issuer

    def get_issuer(self) -> str:
        return self._issuer


class AuthServer:
    """The authorization server's records and its authlib endpoints. `issuer` is its base URL."""

    def __init__(self, issuer: str, *, access_lifetime: int = 3600) -> None:
        self.issuer = issuer
        self.resource = f"{issuer}/mcp"
        self.access_lifetime = access_lifetime
        self.clients: dict[str, Client] = {}
        self.codes: dict[str, Code] = {}
        self.tokens: list[Token] = []
        self.grants: list[str] = []
        """Each token request that succeeded, by grant type (`authorization_code`, `refresh_token`)."""
        self.registrations = 0
        self.authorize_requests: list[dict[str, str]] = []
        self.token_auth: list[str] = []
        """How each token request's client authenticated: `basic`, `post` or `none`."""
        self.refused = 0
        """Bearer tokens the MCP server refused (unknown, revoked or expired)."""
        self._server = self._build()

    # -- what a test does to the records --------------------------------------------------------

    def register(self, redirect_uri: str, *, secret: bool = True) -> Client:
        """A pre-registered client (a confidential one with `secret`)."""
        client = Client(
            client_id=secrets.token_urlsafe(12),
            client_secret=secrets.token_urlsafe(24) if secret else None,
            redirect_uris=[redirect_uri],
            auth_method="client_secret_basic" if secret else "none",
        )
        self.clients[client.client_id] = client
        return client

    def revoke_all(self, *, refresh: bool) -> None:
        """Revoke every access token (and every refresh token too with `refresh`), as a user or an admin would."""
        for token in self.tokens:
            token.revoked = True
            token.refresh_revoked = token.refresh_revoked or refresh

    def live_access_tokens(self) -> list[str]:
        return [token.access_token for token in self.tokens if not token.revoked and not token.is_expired()]

    def every_secret(self) -> list[str]:
        """Every access token, refresh token, code and client secret issued: none may be seen in clear."""
        found = [token.access_token for token in self.tokens]
        found += [token.refresh_token for token in self.tokens if token.refresh_token]
        found += list(self.codes)
        found += [client.client_secret for client in self.clients.values() if client.client_secret]
        return found

    def verify(self, token: str) -> AccessToken | None:
        for record in self.tokens:
            if secrets.compare_digest(record.access_token, token):
                if record.revoked or record.is_expired():
                    self.refused += 1
                    return None
                return AccessToken(
                    token=token,
                    client_id=record.client_id,
                    scopes=record.scope.split(),
                    expires_at=int(record.expires_at),
                    resource=record.resource,
                )
        self.refused += 1
        return None

    # -- authlib ---------------------------------------------------------------------------------

    def _build(self) -> _AuthlibServer:
        owner = self

        class Server(_AuthlibServer):
            def query_client(self, client_id: str) -> Client | None:
                return owner.clients.get(client_id)

            def save_token(self, token: dict[str, Any], request: OAuth2Request) -> None:
                assert request.client is not None
                resource = request.payload.data.get("resource")
                if request.authorization_code is not None:
                    resource = request.authorization_code.resource
                elif request.refresh_token is not None:
                    resource = request.refresh_token.resource
                owner.tokens.append(
                    Token(
                        client_id=request.client.client_id,
                        access_token=token["access_token"],
                        refresh_token=token.get("refresh_token"),
                        scope=token.get("scope", ""),
                        resource=resource,
                        expires_at=time.time() + token["expires_in"],
                    )
                )
                owner.grants.append(request.payload.grant_type)

            def create_oauth2_request(self, request: Any) -> OAuth2Request:
                assert isinstance(request, OAuth2Request)
                return request

            def create_json_request(self, request: Any) -> JsonRequest:
                assert isinstance(request, JsonRequest)
                return request

            def handle_response(self, status: int, body: Any, headers: Any) -> _Reply:
                return _Reply(status, body, list(headers))

            def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
                return None

        class CodeGrant(grants.AuthorizationCodeGrant):
            TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]

            def save_authorization_code(self, code: str, request: OAuth2Request) -> None:
                data = request.payload.data
                owner.codes[code] = Code(
                    code=code,
                    client_id=request.client.client_id,
                    redirect_uri=request.payload.redirect_uri,
                    scope=request.payload.scope or "",
                    resource=data.get("resource"),
                    code_challenge=data.get("code_challenge"),
                    code_challenge_method=data.get("code_challenge_method"),
                )

            def query_authorization_code(self, code: str, client: Client) -> Code | None:
                found = owner.codes.get(code)
                return found if found is not None and found.client_id == client.client_id else None

            def delete_authorization_code(self, authorization_code: Code) -> None:
                owner.codes.pop(authorization_code.code, None)

            def authenticate_user(self, authorization_code: Code) -> str:
                return USER

        class RefreshGrant(grants.RefreshTokenGrant):
            TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]
            INCLUDE_NEW_REFRESH_TOKEN = True  # rotation: each refresh token is good once

            def authenticate_refresh_token(self, refresh_token: str) -> Token | None:
                for token in owner.tokens:
                    if token.refresh_token == refresh_token and not token.refresh_revoked:
                        return token
                return None

            def authenticate_user(self, refresh_token: Token) -> str:
                return USER

            def revoke_old_credential(self, refresh_token: Token) -> None:
                refresh_token.refresh_revoked = True
                refresh_token.revoked = True

        class Registration(ClientRegistrationEndpoint):
            def authenticate_token(self, request: JsonRequest) -> bool:
                return True  # open registration, as MCP servers offer it

            def get_server_metadata(self) -> dict[str, Any]:
                return owner.metadata()

            def save_client(self, client_info: dict[str, Any], client_metadata: dict[str, Any], request: Any) -> Client:
                method = client_metadata.get("token_endpoint_auth_method", "client_secret_basic")
                client = Client(
                    client_id=client_info["client_id"],
                    client_secret=client_info["client_secret"] if method != "none" else None,
                    redirect_uris=list(client_metadata.get("redirect_uris", [])),
                    auth_method=method,
                )
                owner.clients[client.client_id] = client
                owner.registrations += 1
                return client

        class Revocation(RevocationEndpoint):
            CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]

            def query_token(self, token_string: str, token_type_hint: str | None) -> Token | None:
                for token in owner.tokens:
                    if token_string in (token.access_token, token.refresh_token):
                        return token
                return None

            def revoke_token(self, token: Token, request: OAuth2Request) -> None:
                token.revoked = token.refresh_revoked = True

        server = Server()
        lifetime = self.access_lifetime
        server.register_token_generator(
            "default", BearerTokenGenerator(_opaque, _opaque, expires_generator=lambda client, grant: lifetime)
        )
        server.register_grant(CodeGrant, [CodeChallenge(required=True)])
        server.register_grant(RefreshGrant)
        server.register_endpoint(Registration)
        server.register_endpoint(Revocation)
        server.register_extension(_Issuer(self.issuer))
        return server

    def metadata(self) -> dict[str, Any]:
        """RFC 8414 metadata."""
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "registration_endpoint": f"{self.issuer}/register",
            "revocation_endpoint": f"{self.issuer}/revoke",
            "scopes_supported": [SCOPE],
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": True,
        }

    # -- HTTP ------------------------------------------------------------------------------------

    async def _metadata(self, request: Request) -> Response:
        return JSONResponse(self.metadata())

    async def _authorize(self, request: Request) -> Response:
        self.authorize_requests.append(dict(request.query_params))
        oauth = _Request(request, [])
        grant = self._server.get_consent_grant(oauth, end_user=USER)
        reply = self._server.create_authorization_response(oauth, grant_user=USER, grant=grant)
        return reply.starlette()

    async def _token(self, request: Request) -> Response:
        form = parse_qsl((await request.body()).decode())
        basic = request.headers.get("authorization", "").lower().startswith("basic ")
        self.token_auth.append("basic" if basic else "post" if "client_secret" in dict(form) else "none")
        return self._server.create_token_response(_Request(request, form)).starlette()

    async def _register(self, request: Request) -> Response:
        json_request = JsonRequest(request.method, str(request.url), request.headers)
        json_request.payload = _Json(json.loads(await request.body()))
        return self._server.create_endpoint_response("client_registration", json_request).starlette()

    async def _revoke(self, request: Request) -> Response:
        form = parse_qsl((await request.body()).decode())
        return self._server.create_endpoint_response("revocation", _Request(request, form)).starlette()

    def app(self) -> Any:
        """The ASGI app: the protected MCP server over streamable HTTP at `/mcp` and over SSE at `/sse` (a resource
        of its own), and the authorization server's routes."""
        streamable = _StepUp(self.protected_mcp(self.resource).streamable_http_app(), self)
        sse = self.protected_mcp(f"{self.issuer}/sse").sse_app()
        sse_paths = ("/sse", "/.well-known/oauth-protected-resource/sse")

        async def dispatch(scope: Any, receive: Any, send: Any) -> None:
            path = scope.get("path", "")
            if scope["type"] == "http" and (path in sse_paths or path.startswith("/messages/")):
                await sse(scope, receive, send)
            else:
                await streamable(scope, receive, send)

        return dispatch

    def protected_mcp(self, resource: str) -> MCPServer:
        """The MCP server this authorization server protects as `resource`, with the authorization server's routes
        beside it."""
        owner = self

        class Verifier:
            async def verify_token(self, token: str) -> AccessToken | None:
                return owner.verify(token)

        mcp = MCPServer(
            "protected",
            token_verifier=Verifier(),
            auth=AuthSettings(
                issuer_url=self.issuer,  # type: ignore[arg-type]
                resource_server_url=resource,  # type: ignore[arg-type]
                required_scopes=[SCOPE],
                validate_token_resource=True,
            ),
        )

        @mcp.tool()
        def whoami() -> str:
            """Who the caller is signed in as."""
            return USER

        @mcp.tool()
        def echo(text: str) -> str:
            """Echo the text."""
            return text

        @mcp.tool()
        def admin_only() -> str:
            """Needs the admin scope."""
            return "admin"

        mcp.custom_route("/.well-known/oauth-authorization-server", ["GET"])(self._metadata)
        mcp.custom_route("/authorize", ["GET"])(self._authorize)
        mcp.custom_route("/token", ["POST"])(self._token)
        mcp.custom_route("/register", ["POST"])(self._register)
        mcp.custom_route("/revoke", ["POST"])(self._revoke)
        return mcp


class _StepUp:
    """Answers a call of `admin_only` whose token lacks the admin scope with 403 insufficient_scope (a step-up)."""

    def __init__(self, app: Any, auth: AuthServer) -> None:
        self._app = app
        self._auth = auth

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/mcp":
            await self._app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        token = dict(scope["headers"]).get(b"authorization", b"").decode().removeprefix("Bearer ")
        granted = self._auth.verify(token) if token else None
        try:
            called = json.loads(body).get("params", {}).get("name")
        except (ValueError, AttributeError):
            called = None
        if called == "admin_only" and granted is not None and ADMIN not in granted.scopes:
            metadata = f"{self._auth.issuer}/.well-known/oauth-protected-resource/mcp"
            challenge = f'Bearer error="insufficient_scope", scope="{SCOPE} {ADMIN}", resource_metadata="{metadata}"'
            await Response("", status_code=403, headers={"WWW-Authenticate": challenge})(scope, receive, send)
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self._app(scope, replay, send)


def _opaque(client: Any, grant_type: str, user: Any = None, scope: Any = None) -> str:
    return secrets.token_urlsafe(32)


def query_of(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query))


@asynccontextmanager
async def running_auth_server(port: int, *, access_lifetime: int = 3600) -> AsyncIterator[AuthServer]:
    """The authorization server and its protected MCP server (at `/mcp`), served on 127.0.0.1:`port` until exit."""
    auth = AuthServer(f"http://127.0.0.1:{port}", access_lifetime=access_lifetime)
    app = auth.app()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="on")
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(10):
            while not server.started:
                await anyio.sleep(0.01)
        try:
            yield auth
        finally:
            server.should_exit = True


@contextmanager
def threaded_auth_server(port: int, *, access_lifetime: int = 3600) -> Iterator[AuthServer]:
    """`running_auth_server` in a thread of its own, for a test that blocks (on processes it runs)."""
    auth = AuthServer(f"http://127.0.0.1:{port}", access_lifetime=access_lifetime)
    config = uvicorn.Config(auth.app(), host="127.0.0.1", port=port, log_level="error", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="auth server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test authorization server did not start")
        time.sleep(0.01)
    try:
        yield auth
    finally:
        server.should_exit = True
        thread.join(timeout=10)
