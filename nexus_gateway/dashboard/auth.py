"""Signing a browser in to the dashboard, and keeping its form posts its own.

A browser cannot send `Authorization: Bearer` when it navigates, so where tokens are configured the
dashboard also takes one once in the address, `/ui?token=TOKEN`: the front checks it like a bearer token
(`GuardMiddleware`), and the dashboard answers with a random session id in a cookie (`HttpOnly`,
`SameSite=Strict`, path `/ui`) and a page that leaves the token's address. From then on the cookie signs
the browser in; the token itself is never stored in it.

Form posts (approving a tool) carry a CSRF token, an HMAC of the browser's session under a secret of this
process, and must come with an `Origin` of the dashboard's own host. A cookie that `SameSite=Strict`
keeps from other sites, and the front's Origin check, stand behind it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections import OrderedDict
from collections.abc import Callable
from http.cookies import SimpleCookie
from urllib.parse import parse_qs, urlsplit

from starlette.types import Scope

PREFIX = "/ui"
COOKIE = "nexus_ui"
LOGIN_KEY = "nexus.ui_login"
"""Where `owner` leaves a new session id in the ASGI scope for the dashboard to set as a cookie."""
KEEP_SESSIONS = 64


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def cookie_of(scope: Scope) -> str | None:
    header = _header(scope, b"cookie")
    if not header:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except Exception:  # boundary: a malformed Cookie header is no session
        return None
    morsel = jar.get(COOKIE)
    return None if morsel is None else morsel.value


def under_dashboard(scope: Scope) -> bool:
    path = str(scope.get("path", ""))
    return path == PREFIX or path.startswith(f"{PREFIX}/")


class BrowserLogin:
    """The dashboard's browser sessions (in memory: a restart signs every browser out)."""

    def __init__(self) -> None:
        self._sessions: OrderedDict[str, str] = OrderedDict()
        self._secret = secrets.token_bytes(32)

    def owner(self, scope: Scope, check: Callable[[str], str | None]) -> str | None:
        """The token identity of a dashboard request that has no bearer header: its session cookie's, or
        that of a `?token=` that `check` accepts (a new session is then left in the scope). None otherwise,
        and always outside `/ui`."""
        if not under_dashboard(scope):
            return None
        session = cookie_of(scope)
        if session is not None and (owner := self._sessions.get(session)) is not None:
            return owner
        tokens = parse_qs(bytes(scope.get("query_string", b"")).decode("latin-1")).get("token", [])
        owner = check(tokens[0]) if tokens else None
        if owner is None or scope.get("path") == PREFIX:  # `/ui` is redirected to `/ui/`, which signs in
            return owner
        session = secrets.token_urlsafe(32)
        self._sessions[session] = owner
        while len(self._sessions) > KEEP_SESSIONS:
            self._sessions.popitem(last=False)
        scope[LOGIN_KEY] = session
        return owner

    def csrf_token(self, scope: Scope) -> str:
        """The token a form of this browser's pages must send back."""
        session = scope.get(LOGIN_KEY) or cookie_of(scope) or "-"
        return hmac.new(self._secret, str(session).encode(), hashlib.sha256).hexdigest()

    def post_allowed(self, scope: Scope, csrf: str) -> str | None:
        """Why a form post is refused (a sentence), or None when it may go on."""
        origin, host = _header(scope, b"origin"), _header(scope, b"host")
        if not origin or urlsplit(origin).netloc != host:
            return "This form must be sent from the dashboard's own page (the Origin header does not match)."
        if not hmac.compare_digest(csrf, self.csrf_token(scope)):
            return "This form is stale or was not sent from the dashboard: reload the page and try again."
        return None
