"""The gateway over HTTP: streamable HTTP at `/mcp`, SSE at `/sse` + `/messages/`, `/healthz`, `/metrics`,
and the dashboard at `/ui` (dashboard/).

Binds 127.0.0.1 unless told otherwise. On every path, Host and Origin headers are checked (DNS-rebinding
protection), bearer tokens are required when configured (static ones, or the JWT access tokens of
`nexus.oauth`: oauth/), and request bodies are capped. Streamable-HTTP
sessions live in a bounded pool that evicts idle ones (sessions.py).
"""

from __future__ import annotations

import hmac
import logging
import socket
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import uvicorn
from anyio.abc import TaskStatus
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from nexus_gateway.config import NexusSettings
from nexus_gateway.dashboard.auth import BrowserLogin
from nexus_gateway.dashboard.source import GatewaySource
from nexus_gateway.errors import NexusError
from nexus_gateway.gateway import Gateway
from nexus_gateway.server._bodies import AnswerInvalidBodies
from nexus_gateway.server._clients import TOKEN_PROFILE_KEY, ProfilePaths
from nexus_gateway.server.app import build_server, initialization_options
from nexus_gateway.server.clients import ClientRegistry
from nexus_gateway.server.control import control_routes
from nexus_gateway.server.sessions import SessionPool
from nexus_gateway.upstreams.pool import UpstreamState

if TYPE_CHECKING:
    from nexus_gateway.server.oauth import ResourceServer  # imported when nexus.oauth is set (PyJWT, cryptography)

logger = logging.getLogger(__name__)

_LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "[::1]"]


def security_settings(settings: NexusSettings) -> TransportSecuritySettings:
    hosts = [*_LOOPBACK_HOSTS, *settings.allowed_hosts]
    if settings.host not in ("0.0.0.0", "::", *_LOOPBACK_HOSTS):
        hosts.append(settings.host)
    allowed_hosts = [pattern for host in hosts for pattern in (host, f"{host}:*")]
    origins = [f"{scheme}://{host}{port}" for host in hosts for scheme in ("http", "https") for port in ("", ":*")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=allowed_hosts,
        allowed_origins=origins + settings.allowed_origins,
    )


class GuardMiddleware:
    """Before any route runs: Host/Origin (DNS-rebinding protection), bearer tokens (when configured), and a
    request-size cap. Every path is guarded alike, `/healthz` and `/metrics` included. A request with a valid
    token is marked with its token's identity (`scope["user"]`, never the token itself), so sessions are
    owned by the token that opened them (sessions.py)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        security: TransportSecuritySettings,
        tokens: list[str],
        max_bytes: int,
        browser: BrowserLogin | None = None,
        profile_tokens: Callable[[], Mapping[str, str]] = dict,
        oauth: ResourceServer | None = None,
    ) -> None:
        self.app = app
        self.browser = browser  # the dashboard's cookie or `?token=` sign-in, under /ui only
        self.security = TransportSecurityMiddleware(security)
        self.tokens = [token.encode() for token in tokens]
        self.profile_tokens = profile_tokens
        """Tokens bound to a profile (read on every request: a reloaded config's tokens count at once)."""
        self.max_bytes = max_bytes
        self.oauth = oauth
        """JWT access tokens of `nexus.oauth` (server/oauth/), checked when no static token matches."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rejected = await self.security.validate_request(Request(scope), is_post=False)
        if rejected is not None:
            await rejected(scope, receive, send)
            return
        headers = dict(scope["headers"])
        bound = self.profile_tokens()
        if self.oauth is not None and self.oauth.is_metadata_path(scope["path"]):
            pass  # RFC 9728 metadata: what a client reads to learn how to sign in, before it has a token
        elif self.tokens or bound or self.oauth is not None:
            sent = sum(1 for name, _ in scope["headers"] if name == b"authorization")
            if sent > 1:  # which one to believe? (a dict would keep the last: a proxy's added header could win)
                message = f"Send one Authorization header; this request had {sent}."
                await JSONResponse({"error": "bad_request", "message": message}, status_code=400)(scope, receive, send)
                return
            owner = self._token_owner(headers.get(b"authorization", b""), bound)
            if owner is None and self.browser is not None:
                owner = self.browser.owner(scope, lambda token: self._token_owner(f"Bearer {token}".encode(), bound))
            if owner is None and self.oauth is not None:
                await self._oauth(scope, receive, send, headers.get(b"authorization"))
                return
            if owner is None:
                message = "Send 'Authorization: Bearer <token>' with a configured token (a browser: /ui?token=...)."
                response = JSONResponse(
                    {"error": "unauthorized", "message": message},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await response(scope, receive, send)
                return
            if owner.startswith("profile:"):
                scope[TOKEN_PROFILE_KEY] = owner.removeprefix("profile:")
            scope["user"] = AuthenticatedUser(AccessToken(token="", client_id=owner, scopes=[]))
        await self._admit(scope, receive, send)

    async def _oauth(self, scope: Scope, receive: Receive, send: Send, authorization: bytes | None) -> None:
        """A request no static token signs in: served when it carries a valid access token of
        `nexus.oauth`, refused (401, 403 or 503) otherwise."""
        assert self.oauth is not None
        grant = await self.oauth.admit(scope, receive, send, authorization)
        if grant is None:
            return
        if self.oauth.refused_path(scope["path"]):
            message = f"An OAuth access token reaches /mcp and /sse only; {scope['path']} needs nexus.auth_tokens."
            await JSONResponse({"error": "forbidden", "message": message}, status_code=403)(scope, receive, send)
            return
        if grant.profile is not None:
            scope[TOKEN_PROFILE_KEY] = grant.profile
        scope["user"] = AuthenticatedUser(grant.token)
        await self._admit(scope, receive, send)

    async def _admit(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The request body cap, then the app."""
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            message = f"Request body of {int(length)} bytes exceeds the {self.max_bytes}-byte limit."
            await JSONResponse({"error": "payload_too_large", "message": message}, status_code=413)(
                scope, receive, send
            )
            return
        await self.app(scope, receive, send)

    def _token_owner(self, header: bytes, bound: Mapping[str, str]) -> str | None:
        """`token-<n>` for the n-th configured token the header carries, `profile:<name>` for a profile's
        token, else None (constant-time compares)."""
        scheme, _, token = header.partition(b" ")
        if scheme.lower() != b"bearer" or not token:
            return None
        matches = [hmac.compare_digest(token.strip(), expected) for expected in self.tokens]
        if any(matches):
            return f"token-{matches.index(True)}"
        profiles = [name for expected, name in bound.items() if hmac.compare_digest(token.strip(), expected.encode())]
        return f"profile:{profiles[0]}" if profiles else None


class _AlreadySent(Response):
    """The endpoint's reply when the transport has answered on its own (an SSE stream, or its rejection)."""

    def __init__(self) -> None:
        super().__init__()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        return None


class _Dashboard:
    """The dashboard, built on its first request: jinja2 and the templates load only when someone looks
    (about 90 ms and a few MB off every HTTP cold start)."""

    def __init__(self, gateway: Gateway, login: BrowserLogin) -> None:
        self._gateway, self._login = gateway, login
        self._app: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._app is None:
            from nexus_gateway.dashboard.pages import dashboard_app

            source = GatewaySource(self._gateway, ClientRegistry.of(self._gateway).rows)
            self._app = dashboard_app(source, self._login)
        await self._app(scope, receive, send)


def build_http_app(gateway: Gateway, *, profile: str | None = None) -> Starlette:
    """The HTTP front; a request naming no profile (by token or `/p/NAME/`) is served under `profile`."""
    settings = gateway.settings
    server = build_server(gateway, profile=profile)
    security = security_settings(settings)
    login = BrowserLogin()
    sse = SseServerTransport("/messages/", security_settings=security, max_request_body_size=settings.max_request_bytes)
    sessions = SessionPool(
        server,
        security_settings=security,
        max_request_body_size=settings.max_request_bytes,
        max_sessions=settings.max_sessions,
        idle_timeout=settings.session_idle_timeout,
        max_per_owner=settings.max_sessions_per_token
        if settings.auth_tokens or settings.profiles or settings.oauth
        else None,
        quiet_json=settings.fast_path,
    )

    async def handle_sse(request: Request) -> Response:
        try:
            async with sse.connect_sse(request.scope, request.receive, request._send) as (read, write):
                await server.run(read, write, initialization_options(server))
        except ValueError:
            pass  # the transport already answered (a rejected Host or Origin)
        return _AlreadySent()

    async def healthz(request: Request) -> Response:
        statuses = gateway.pool.statuses()
        healthy = all(status.state is UpstreamState.HEALTHY for status in statuses)
        body: dict[str, Any] = {
            "status": "ok" if healthy else "degraded",
            "mode": gateway.mode,
            "tools": len(gateway.catalog),
            "upstreams": {status.name: status.state.value for status in statuses},
            "quarantined": gateway.quarantined(),
            "trust": gateway.trust(),
            "store": gateway.store_status(),
            "index": gateway.index_status(),
            "http_sessions": sessions.open_sessions,
        }
        return JSONResponse(body)

    async def metrics(request: Request) -> Response:
        up = {status.name: status.state is UpstreamState.HEALTHY for status in gateway.pool.statuses()}
        text = gateway.metrics.render(up, len(gateway.catalog)) + _session_metrics(sessions) + _direct_metrics(gateway)
        text += gateway.store.status().metrics()
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4")

    routes: list[Route | Mount] = [
        Route(
            "/mcp", endpoint=AnswerInvalidBodies(StreamableHTTPASGIApp(sessions), max_bytes=settings.max_request_bytes)
        ),
        Route("/sse", endpoint=handle_sse, methods=["GET"]),
        Mount("/messages/", app=AnswerInvalidBodies(sse.handle_post_message, max_bytes=settings.max_request_bytes)),
        Route("/healthz", endpoint=healthz, methods=["GET"]),
        Route("/metrics", endpoint=metrics, methods=["GET"]),
        Mount("/ui", app=_Dashboard(gateway, login)),
    ]
    routes += control_routes(gateway)
    oauth = None
    if settings.oauth is not None:
        from nexus_gateway.server.oauth import ResourceServer

        oauth = ResourceServer(settings.oauth, lambda: gateway.settings.profiles)
        routes += oauth.routes()
        audience = settings.oauth.audience or "the origin each request comes to"
        logger.info("oauth: accepting access tokens of %s for %s", settings.oauth.issuer, audience)
    app = Starlette(routes=routes, lifespan=lambda app: sessions.run())
    app.add_middleware(ProfilePaths, settings=lambda: gateway.settings)  # inside the guard: after the token
    app.add_middleware(
        GuardMiddleware,
        security=security,
        tokens=settings.auth_tokens,
        max_bytes=settings.max_request_bytes,
        browser=login,
        profile_tokens=lambda: gateway.settings.profile_tokens(),
        oauth=oauth,
    )
    return app


def _session_metrics(sessions: SessionPool) -> str:
    return (
        "\n".join(
            [
                "# HELP nexus_http_sessions Open streamable-HTTP sessions.",
                "# TYPE nexus_http_sessions gauge",
                f"nexus_http_sessions {sessions.open_sessions}",
                "# HELP nexus_http_sessions_evicted_total Idle sessions ended to make room for a new client.",
                "# TYPE nexus_http_sessions_evicted_total counter",
                f"nexus_http_sessions_evicted_total {sessions.evicted}",
                "# HELP nexus_http_sessions_refused_total New sessions refused because every session was busy.",
                "# TYPE nexus_http_sessions_refused_total counter",
                f"nexus_http_sessions_refused_total {sessions.refused}",
            ]
        )
        + "\n"
    )


def _direct_metrics(gateway: Gateway) -> str:
    direct = {name: upstream.direct.calls for name, upstream in gateway.pool.upstreams.items() if upstream.direct}
    return (
        "\n".join(
            [
                "# HELP nexus_direct_calls_total Upstream tool calls sent without the SDK's client (fast path).",
                "# TYPE nexus_direct_calls_total counter",
                *(f'nexus_direct_calls_total{{server="{name}"}} {calls}' for name, calls in sorted(direct.items())),
            ]
        )
        + "\n"
    )


async def serve_http(
    gateway: Gateway,
    *,
    host: str,
    port: int,
    profile: str | None = None,
    task_status: TaskStatus[tuple[str, int]] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until cancelled or signalled; logs the bound URL (useful with port 0), and reports the bound
    (host, port) to `task_status` once it accepts connections."""
    app = build_http_app(gateway, profile=profile)
    # ws="none": MCP has no WebSocket transport, and uvicorn would import `websockets` for nothing
    config = uvicorn.Config(app, log_level="warning", lifespan="on", ws="none", timeout_graceful_shutdown=2)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(config.backlog)  # connections queue from here on, before uvicorn accepts
    except OSError as exc:
        sock.close()
        raise NexusError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    bound_host, bound_port = sock.getsockname()[:2]
    logger.info("nexus-gateway listening on http://%s:%d (/mcp, /sse, /healthz, /ui)", bound_host, bound_port)
    server = uvicorn.Server(config)
    stopped = anyio.Event()
    task_status.started((bound_host, bound_port))

    async def run() -> None:
        with anyio.CancelScope(shield=True):  # stopped by should_exit, so connections close in order
            try:
                await server.serve(sockets=[sock])
            finally:
                stopped.set()

    with sock:
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            try:
                await stopped.wait()
            finally:
                server.should_exit = True
                with anyio.CancelScope(shield=True), anyio.move_on_after(config.timeout_graceful_shutdown or 5):
                    await stopped.wait()
                server.force_exit = not stopped.is_set()
