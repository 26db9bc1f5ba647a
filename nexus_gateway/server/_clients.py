"""Which profile a request is served under (profiles.py), as the front learns it.

    stdio / daemon connection -> build_server(gateway, profile=NAME)        (the connection's default)
    HTTP bearer token          -> GuardMiddleware marks scope[PROFILE_KEY]   (token -> profile)
    HTTP path /p/NAME/...      -> ProfilePaths marks it, sets root_path      (/p/NAME/mcp, /p/NAME/sse)

A token bound to one profile never reaches another's path, nor the gateway-wide ones (`/healthz`,
`/metrics`, `/control`, `/ui`): 403. `/p/NAME/...` is routed as `/...`
(the ASGI `root_path` convention), so SSE tells its client to post to `/p/NAME/messages/`, which is
marked again on every post.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from mcp.server.context import ServerRequestContext
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from nexus_gateway.config import NexusSettings

PROFILE_KEY = "nexus.profile"
"""The ASGI scope key holding the profile a request is served under (absent: the connection's default)."""
TOKEN_PROFILE_KEY = "nexus.token_profile"
"""The profile the request's bearer token is bound to, when it is a profile's token."""
_PATH = re.compile(r"^/p/([A-Za-z0-9_.-]{1,64})(?=/|$)")
GATEWAY_WIDE = ("/healthz", "/metrics", "/control", "/ui")
"""Paths that show or change the whole gateway: a profile's token is refused there."""


def split_profile_path(path: str) -> tuple[str | None, str]:
    """(NAME, the rest) of `/p/NAME/rest`; (None, path) for a path outside any profile."""
    found = _PATH.match(path)
    return (found.group(1), path[found.end() :]) if found else (None, path)


def request_profile(ctx: ServerRequestContext[Any], default: str | None) -> str | None:
    """The profile `ctx`'s request is served under: the one its HTTP request was marked with, else `default`."""
    scope = getattr(ctx.request, "scope", None)
    if isinstance(scope, dict) and PROFILE_KEY in scope:
        profile: str | None = scope[PROFILE_KEY]
        return profile
    return default


class ProfilePaths:
    """`/p/NAME/...` served as `/...` under profile NAME (404 for a profile the config does not name, 403 for
    a token bound to another profile); any other path under the token's profile, if it has one."""

    def __init__(self, app: ASGIApp, *, settings: Callable[[], NexusSettings]) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        bound = scope.get(TOKEN_PROFILE_KEY)
        found = _PATH.match(scope["path"])
        rest = scope["path"][found.end() :] if found else scope["path"]
        if bound is not None and any(rest == path or rest.startswith(f"{path}/") for path in GATEWAY_WIDE):
            message = f"This token is for profile {bound!r}; {rest} needs a token from nexus.auth_tokens."
            await JSONResponse({"error": "forbidden", "message": message}, status_code=403)(scope, receive, send)
            return
        if found is None:
            if bound is not None:
                scope[PROFILE_KEY] = bound
            await self.app(scope, receive, send)
            return
        name = found.group(1)
        if name not in self.settings().profiles:
            message = f"No profile {name!r} is configured (nexus.profiles)."
            await JSONResponse({"error": "unknown_profile", "message": message}, status_code=404)(scope, receive, send)
            return
        if bound is not None and bound != name:
            message = f"This token is for profile {bound!r}; use /p/{bound}/ or no profile path."
            await JSONResponse({"error": "forbidden", "message": message}, status_code=403)(scope, receive, send)
            return
        scope[PROFILE_KEY] = name
        scope["root_path"] = scope.get("root_path", "") + found.group(0)
        await self.app(scope, receive, send)
