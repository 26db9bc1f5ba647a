"""Which clients the front serves now: one row per connection, for the dashboard's clients page.

`ClientRegistry.of(gateway).seen(ctx)` is called on a client's requests (app.py). A handshake-era client
(stdio, SSE, a streamable-HTTP session) is one `Connection` for its whole life: its row goes when the
connection closes. A modern-era (2026-07-28) client is stateless, a new `Connection` per request, so its
rows are keyed by (transport, owner, client name) and shown while it was seen in the last `RECENT` seconds.
"""

from __future__ import annotations

import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any

from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext

from nexus_gateway._sdk import client_connection
from nexus_gateway.dashboard.source import ClientRow

MODERN_ERA = "2026-07-28"
RECENT = 600.0
"""A modern-era client seen this many seconds ago is still listed."""
KEEP_MODERN = 64


def profile_of(connection: Connection, request: Any) -> str:
    """The profile a client is served through, or `-`. Profiles are chosen elsewhere (the shim's
    `--profile`, a token, a `/p/NAME/mcp` path); this is the one place that reads where they are kept:
    the connection's state, the request's ASGI scope or its path parameters, under `profile`."""
    holders: list[Any] = [connection.state]
    if request is not None:
        holders += [getattr(request, "scope", None), getattr(request, "path_params", None)]
    for holder in holders:
        if isinstance(holder, dict):
            value = holder.get("profile")
            name = getattr(value, "name", value)
            if isinstance(name, str) and name:
                return name
    return "-"


def _transport(request: Any) -> str:
    if request is None:
        return "stdio"
    path = str(getattr(request, "url", "")).split("?", 1)[0]
    return "sse" if "/messages" in path else "streamable-http"


def _owner(request: Any) -> str:
    user = getattr(request, "scope", {}).get("user") if request is not None else None
    token = getattr(user, "access_token", None)
    client_id = getattr(token, "client_id", None)
    return client_id if isinstance(client_id, str) else "-"


@dataclass
class _Seen:
    row: ClientRow


class ClientRegistry:
    """The connected clients of one gateway (every front built on it shares the registry)."""

    _instances: weakref.WeakKeyDictionary[Any, ClientRegistry] = weakref.WeakKeyDictionary()

    def __init__(self) -> None:
        self._live: weakref.WeakKeyDictionary[Connection, _Seen] = weakref.WeakKeyDictionary()
        self._modern: OrderedDict[tuple[str, str, str], _Seen] = OrderedDict()

    @classmethod
    def of(cls, gateway: object) -> ClientRegistry:
        registry = cls._instances.get(gateway)
        if registry is None:
            registry = cls._instances[gateway] = cls()
        return registry

    def seen(self, ctx: ServerRequestContext[Any], profile: str | None = None) -> None:
        connection = client_connection(ctx)
        now = time.time()
        seen = self._live.get(connection)
        if seen is not None:
            seen.row = replace(seen.row, last_seen=now, requests=seen.row.requests + 1)
            return
        request = ctx.request
        params = connection.client_params
        info = getattr(params, "client_info", None)
        name = f"{info.name} {info.version}" if info is not None else "-"
        version = connection.protocol_version
        row = ClientRow(
            transport=_transport(request),
            era="modern" if version == MODERN_ERA else "legacy",
            protocol_version=version,
            name=name,
            owner=_owner(request),
            profile=profile or profile_of(connection, request),
            since=now,
            last_seen=now,
            requests=1,
        )
        if row.era == "modern":
            key = (row.transport, row.owner, row.name)
            old = self._modern.pop(key, None)
            if old is not None:
                row = replace(row, since=old.row.since, requests=old.row.requests + 1)
            self._modern[key] = _Seen(row)
            while len(self._modern) > KEEP_MODERN:
                self._modern.popitem(last=False)
            return
        self._live[connection] = _Seen(row)
        connection.exit_stack.callback(self._live.pop, connection, None)

    def rows(self) -> list[ClientRow]:
        """Connected clients, oldest first."""
        cutoff = time.time() - RECENT
        modern = [seen.row for seen in self._modern.values() if seen.row.last_seen >= cutoff]
        return sorted([seen.row for seen in list(self._live.values())] + modern, key=lambda row: row.since)
