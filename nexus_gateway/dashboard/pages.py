"""The dashboard's routes: server-rendered pages, one form post, and an event stream of upstream health.

/ui, /ui/upstreams   upstreams: health, restarts, last error, tools (live over /ui/events); POST
                     /ui/upstreams/sign-in starts the OAuth sign-in of one that needs authorization
/ui/catalog?q=       the catalog, or the `search_tools` ranking for q with scores and the gate's decision
/ui/quarantine       quarantined tools with their diff; POST /ui/quarantine/approve pins one (the form
                     names the definition hash shown; a tool changed since is refused, the new diff shown)
/ui/calls, /ui/runs  the last upstream calls and `run` traces (activity.py)
/ui/clients          connected clients and their profiles
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

import anyio
import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from nexus_gateway.dashboard.auth import COOKIE, LOGIN_KEY, PREFIX, BrowserLogin
from nexus_gateway.dashboard.source import DashboardSource
from nexus_gateway.errors import NexusError
from nexus_gateway.routing import gate
from nexus_gateway.upstreams.pool import UpstreamStatus

HERE = Path(__file__).parent
HEALTH_POLL_SECONDS = 0.5
"""How often the event stream looks at upstream health (it sends only what changed)."""
KEEPALIVE_SECONDS = 15.0
SEARCH_K = 10
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # not no-referrer: Chromium then posts forms with `Origin: null`
    "Cache-Control": "no-store",
}
PAGES = [
    ("upstreams", "Upstreams"),
    ("catalog", "Catalog"),
    ("quarantine", "Quarantine"),
    ("calls", "Recent calls"),
    ("runs", "Run traces"),
    ("clients", "Clients"),
]

_templates = jinja2.Environment(
    loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True, undefined=jinja2.StrictUndefined
)
_templates.filters["clock"] = lambda at: time.strftime("%H:%M:%S", time.localtime(at))
_templates.filters["pretty"] = lambda value: json.dumps(value, indent=2, ensure_ascii=False, default=str)


def health_of(statuses: list[UpstreamStatus]) -> list[dict[str, Any]]:
    """What the upstreams page shows of each upstream, as the event stream sends it."""
    return [
        {
            "name": status.name,
            "transport": status.transport,
            "health": status.state.value,
            "tools": status.tools,
            "restarts": status.restarts,
            "last_error": status.last_error or "",
        }
        for status in statuses
    ]


class Dashboard:
    def __init__(self, source: DashboardSource, login: BrowserLogin) -> None:
        self.source = source
        self.login = login

    def render(self, request: Request, page: str, status_code: int = 200, **values: Any) -> Response:
        body = _templates.get_template(f"{page}.html").render(
            page=page,
            pages=PAGES,
            prefix=PREFIX,
            mode=self.source.mode,
            trust=self.source.trust(),
            csrf=self.login.csrf_token(request.scope),
            **values,
        )
        return HTMLResponse(body, status_code=status_code, headers=SECURITY_HEADERS)

    async def upstreams(self, request: Request) -> Response:
        return self.render(request, "upstreams", upstreams=health_of(self.source.upstreams()), problem=None)

    async def sign_in(self, request: Request) -> Response:
        """Start the sign-in of an upstream that waits for one, and send the browser to its authorization page
        (its redirect comes back to the gateway's loopback listener)."""
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        name, csrf = form.get("name", [""])[0], form.get("csrf", [""])[0]
        refused = self.login.post_allowed(request.scope, csrf)
        problem: str | None = refused
        if refused is None:
            try:
                return RedirectResponse(await self.source.sign_in(name), status_code=303)
            except NexusError as exc:
                problem = str(exc)
        rows = health_of(self.source.upstreams())
        return self.render(request, "upstreams", 403 if refused else 409, upstreams=rows, problem=problem)

    async def catalog(self, request: Request) -> Response:
        query = request.query_params.get("q", "").strip()
        k = _bounded_int(request.query_params.get("k"), SEARCH_K, 1, 50)
        results = await self.source.search(query, k) if query else None
        margin = gate.margin([result.score for result in results or []])
        tools = self.source.tools() if results is None else []
        return self.render(
            request,
            "catalog",
            query=query,
            k=k,
            results=results,
            margin=round(margin, 4) if math.isfinite(margin) else None,
            tau=self.source.tau,
            tools=tools,
        )

    async def quarantine(self, request: Request) -> Response:
        approved = request.query_params.get("approved")
        return self.render(request, "quarantine", rows=self.source.quarantined(), approved=approved, problem=None)

    async def approve(self, request: Request) -> Response:
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        name, csrf = form.get("name", [""])[0], form.get("csrf", [""])[0]
        reviewed = form.get("hash", [""])[0]
        refused = self.login.post_allowed(request.scope, csrf)
        if refused is not None:
            return self.render(
                request, "quarantine", 403, rows=self.source.quarantined(), approved=None, problem=refused
            )
        try:
            approved = self.source.approve(name, reviewed)
        except NexusError as exc:
            return self.render(
                request, "quarantine", 409, rows=self.source.quarantined(), approved=None, problem=str(exc)
            )
        return RedirectResponse(f"{PREFIX}/quarantine?approved={quote(approved.name)}", status_code=303)

    async def calls(self, request: Request) -> Response:
        return self.render(request, "calls", calls=self.source.activity.calls())

    async def runs(self, request: Request) -> Response:
        return self.render(request, "runs", runs=self.source.activity.runs())

    async def clients(self, request: Request) -> Response:
        return self.render(request, "clients", clients=self.source.clients(), now=time.time())

    async def events(self, request: Request) -> Response:
        return StreamingResponse(
            self._health_events(), media_type="text/event-stream", headers={"Cache-Control": "no-store"}
        )

    async def _health_events(self) -> AsyncIterator[str]:
        """`health` events: every upstream's row, first at once, then whenever any of it changes."""
        sent: list[dict[str, Any]] | None = None
        quiet = 0.0
        while True:
            now = health_of(self.source.upstreams())
            if now != sent:
                sent, quiet = now, 0.0
                yield f"event: health\ndata: {json.dumps(now)}\n\n"
            elif quiet >= KEEPALIVE_SECONDS:
                quiet = 0.0
                yield ": keepalive\n\n"
            await anyio.sleep(HEALTH_POLL_SECONDS)
            quiet += HEALTH_POLL_SECONDS


def _bounded_int(text: str | None, default: int, low: int, high: int) -> int:
    try:
        return max(low, min(int(text or default), high))
    except ValueError:
        return default


class _SignIn:
    """Answers a request that just signed in with `?token=`: the session cookie, and a page that goes on to
    the same address without the token (so it leaves the address bar and the history)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        session = scope.get(LOGIN_KEY) if scope["type"] == "http" else None
        if session is None:
            await self.app(scope, receive, send)
            return
        query = [
            (key, value) for key, value in parse_qs(scope["query_string"].decode("latin-1")).items() if key != "token"
        ]
        target = scope["path"] + ("?" + "&".join(f"{quote(k)}={quote(v[0])}" for k, v in query) if query else "")
        body = _templates.get_template("signed_in.html").render(target=target)
        response = HTMLResponse(body, headers=SECURITY_HEADERS | {"Refresh": f"0; url={target}"})
        response.set_cookie(COOKIE, str(session), path=PREFIX, httponly=True, samesite="strict")
        await response(scope, receive, send)


def dashboard_app(source: DashboardSource, login: BrowserLogin) -> ASGIApp:
    """The dashboard, to mount at `/ui` behind the front's guard (which signs browsers in through `login`)."""
    dashboard = Dashboard(source, login)
    app = Starlette(
        routes=[
            Route("/", dashboard.upstreams, methods=["GET"]),
            Route("/upstreams", dashboard.upstreams, methods=["GET"]),
            Route("/upstreams/sign-in", dashboard.sign_in, methods=["POST"]),
            Route("/catalog", dashboard.catalog, methods=["GET"]),
            Route("/quarantine", dashboard.quarantine, methods=["GET"]),
            Route("/quarantine/approve", dashboard.approve, methods=["POST"]),
            Route("/calls", dashboard.calls, methods=["GET"]),
            Route("/runs", dashboard.runs, methods=["GET"]),
            Route("/clients", dashboard.clients, methods=["GET"]),
            Route("/events", dashboard.events, methods=["GET"]),
            Mount("/static", app=StaticFiles(directory=HERE / "static")),
        ]
    )
    return _SignIn(app)
