"""Streamable-HTTP sessions with a bounded pool: a flood of `initialize` requests cannot lock anyone out.

The SDK's session manager keeps up to 10,000 sessions for 30 idle minutes each and answers 503 to every
newcomer once that many are open, so any process that can reach the port can fill it (and the memory
behind it) and hold it. `SessionPool` keeps the SDK's transport and serving loop and changes admission:

- at most `max_sessions` sessions; when the pool is full, a newcomer evicts the **oldest idle** session
  (idle: no request in flight, no open GET stream), taken from the owner that holds the most sessions,
  so a light user's sessions go last. Only when every session is busy is the newcomer refused (503);
- at most `max_per_owner` sessions per bearer token: an owner at its cap evicts its own oldest idle
  session, never someone else's, and is refused only when all of its own sessions are busy;
- sessions idle for `idle_timeout` seconds end (the SDK's idle scope), as do evicted ones.

The owner of a session is the bearer token that created it (`GuardMiddleware` marks the request;
the SDK then also refuses that session to any other token). Without configured tokens every client
is one anonymous owner and the per-owner cap does not apply. The modern (2026-07-28) era never opens
a session: each POST is served and forgotten, so it holds nothing between requests.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from typing import Any
from uuid import uuid4

from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from nexus_gateway._sdk import QuietJSONTransport
from nexus_gateway.server._quiet import SessionQuiet

logger = logging.getLogger(__name__)


class SessionPool(StreamableHTTPSessionManager):
    """The SDK's session manager with eviction of idle sessions and a per-owner cap (see the module doc)."""

    def __init__(
        self,
        app: Server[Any],
        *,
        security_settings: TransportSecuritySettings,
        max_request_body_size: int,
        max_sessions: int,
        idle_timeout: float,
        max_per_owner: int | None,
        quiet_json: bool = True,
    ) -> None:
        # The SDK's own cap stays off: admission below decides, and evicts instead of refusing.
        super().__init__(
            app,
            security_settings=security_settings,
            max_request_body_size=max_request_body_size,
            session_idle_timeout=idle_timeout,
            max_sessions=None,
        )
        self.limit = max_sessions
        self.quiet_json = quiet_json
        """Whether quiet requests are answered with JSON (else every request gets an SSE stream)."""
        self.max_per_owner = max_per_owner
        self.evicted = 0
        self.refused = 0

    @property
    def open_sessions(self) -> int:
        return len(self._server_instances)

    def _admit_session(self, requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        """Make room for `requestor`'s new session (evicting idle ones), then register it; None to refuse."""
        owner = _owner(requestor)
        if self.max_per_owner is not None and owner is not None:
            own = [sid for sid in self._server_instances if self._owner_of(sid) == owner]
            if len(own) >= self.max_per_owner and not self._evict_oldest_idle(own):
                return self._refuse(f"all {len(own)} sessions of this token are busy")
        if len(self._server_instances) >= self.limit and not self._evict_oldest_idle(list(self._server_instances)):
            return self._refuse(f"all {self.limit} sessions are busy")
        transport = QuietJSONTransport(
            mcp_session_id=uuid4().hex,
            event_store=self.event_store,
            security_settings=self.security_settings,
            retry_interval=self.retry_interval,
            idle_timeout=self.session_idle_timeout,
            quiet=SessionQuiet() if self.quiet_json else _never,
        )  # as the SDK's `_admit_session` makes it, answering quiet requests with JSON (server/_quiet.py)
        session_id = transport.mcp_session_id
        assert session_id is not None
        if requestor is not None:
            self._session_owners[session_id] = requestor
        self._server_instances[session_id] = transport
        return transport

    def _refuse(self, why: str) -> StreamableHTTPServerTransport | None:
        """None (the SDK then answers 503), counted and logged."""
        self.refused += 1
        logger.warning("refusing a new HTTP session: %s (none is idle)", why)
        return None

    def _owner_of(self, session_id: str) -> str | None:
        return _owner(self._session_owners.get(session_id))

    def _evict_oldest_idle(self, candidates: list[str]) -> bool:
        """End the oldest idle session among `candidates`, of the owner holding the most sessions; False if
        none is idle. Its id answers 404 from now on; its serving task winds down as on an idle timeout."""
        idle = {sid: since for sid in candidates if (since := _idle_since(self._server_instances[sid])) is not None}
        if not idle:
            return False
        held = Counter(self._owner_of(sid) for sid in self._server_instances)
        victim = min(idle, key=lambda sid: (-held[self._owner_of(sid)], idle[sid]))
        transport = self._server_instances.pop(victim)
        self._session_owners.pop(victim, None)
        assert transport.idle_scope is not None  # idle implies the scope exists
        transport.idle_scope.cancel()
        self.evicted += 1
        logger.info("evicted idle HTTP session %s to make room for a new one", victim)
        return True


def _never(message: object) -> bool:
    return False


def _owner(requestor: AuthorizationContext | None) -> str | None:
    return None if requestor is None else requestor["client_id"]


def _idle_since(transport: StreamableHTTPServerTransport) -> float | None:
    """When the session's idle countdown expires (earlier means idle for longer), or None while it is busy.

    The SDK's transport parks the deadline at infinity while a request (or GET stream) is in flight and
    sets it to now + idle_timeout when the last one ends; before its serving task starts it has no scope."""
    scope = transport.idle_scope
    if scope is None:
        return None
    if scope.cancel_called:
        return -math.inf  # already ending (timed out or evicted): the first to make room
    return scope.deadline if math.isfinite(scope.deadline) else None
