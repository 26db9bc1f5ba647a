"""The gateway over HTTP: streamable HTTP at `/mcp`, SSE at `/sse` + `/messages/`, `/healthz`, `/metrics`.

Binds 127.0.0.1 unless told otherwise. Host and Origin headers are checked (DNS-rebinding
protection), bearer tokens are required when configured, and request bodies are capped.
"""

from __future__ import annotations

import hmac
import logging
import socket
from typing import Any

import anyio
import uvicorn
from mcp.server.sse import SseServerTransport
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from nexus_gateway.config import NexusSettings
from nexus_gateway.errors import NexusError
from nexus_gateway.gateway import Gateway
from nexus_gateway.server.app import build_server, initialization_options
from nexus_gateway.upstream import UpstreamState

logger = logging.getLogger(__name__)

_LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "[::1]"]
_OPEN_PATHS = frozenset({"/healthz"})


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
    """Bearer tokens (when configured) and a request-size cap, before any route runs."""

    def __init__(self, app: ASGIApp, *, tokens: list[str], max_bytes: int) -> None:
        self.app = app
        self.tokens = [token.encode() for token in tokens]
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in _OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        if self.tokens and not self._authorized(headers.get(b"authorization", b"")):
            response = JSONResponse(
                {"error": "unauthorized", "message": "Send 'Authorization: Bearer <token>' with a configured token."},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
            await response(scope, receive, send)
            return
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            message = f"Request body of {int(length)} bytes exceeds the {self.max_bytes}-byte limit."
            await JSONResponse({"error": "payload_too_large", "message": message}, status_code=413)(
                scope, receive, send
            )
            return
        await self.app(scope, receive, send)

    def _authorized(self, header: bytes) -> bool:
        scheme, _, token = header.partition(b" ")
        if scheme.lower() != b"bearer" or not token:
            return False
        return any(hmac.compare_digest(token.strip(), expected) for expected in self.tokens)


def build_http_app(gateway: Gateway) -> Starlette:
    settings = gateway.settings
    server = build_server(gateway)
    security = security_settings(settings)
    sse = SseServerTransport("/messages/", security_settings=security, max_request_body_size=settings.max_request_bytes)

    async def handle_sse(request: Request) -> Response:
        try:
            async with sse.connect_sse(request.scope, request.receive, request._send) as (read, write):
                await server.run(read, write, initialization_options(server))
        except ValueError:
            pass  # the transport already answered (a rejected Host or Origin)
        return Response()

    async def healthz(request: Request) -> Response:
        statuses = gateway.pool.statuses()
        healthy = all(status.state is UpstreamState.HEALTHY for status in statuses)
        body: dict[str, Any] = {
            "status": "ok" if healthy else "degraded",
            "mode": gateway.mode,
            "tools": len(gateway.catalog),
            "upstreams": {status.name: status.state.value for status in statuses},
            "quarantined": gateway.quarantined(),
        }
        return JSONResponse(body)

    async def metrics(request: Request) -> Response:
        up = {status.name: status.state is UpstreamState.HEALTHY for status in gateway.pool.statuses()}
        text = gateway.metrics.render(up, len(gateway.catalog))
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4")

    routes: list[Route | Mount] = [
        Route("/sse", endpoint=handle_sse, methods=["GET"]),
        Mount("/messages/", app=sse.handle_post_message),
        Route("/healthz", endpoint=healthz, methods=["GET"]),
        Route("/metrics", endpoint=metrics, methods=["GET"]),
    ]
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        transport_security=security,
        max_request_body_size=settings.max_request_bytes,
        host=settings.host,
        custom_starlette_routes=routes,  # type: ignore[arg-type]
    )
    app.add_middleware(GuardMiddleware, tokens=settings.auth_tokens, max_bytes=settings.max_request_bytes)
    return app


async def serve_http(gateway: Gateway, *, host: str, port: int) -> None:
    """Serve until cancelled or signalled; logs the bound URL (useful with port 0)."""
    app = build_http_app(gateway)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
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
    logger.info("nexus-gateway listening on http://%s:%d (/mcp, /sse, /healthz)", bound_host, bound_port)
    server = uvicorn.Server(config)
    stopped = anyio.Event()

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
