"""`subscriptions/listen` (2026-07-28): how a modern host hears of list changes and resource updates.

The handshake era sends `list_changed` and `resources/updated` on the host's session. The modern
era has no session: a host opens a `subscriptions/listen` stream (the request's response is the
stream) naming what it wants, list changes and resource URIs. The gateway publishes its own list
changes and the upstreams' resource updates on one bus, and the SDK's `ListenHandler` serves each
stream from it. The URIs a stream names are subscribed upstream while the stream is open (shared
with the handshake hosts' `resources/subscribe`: once per URI); a URI whose upstream cannot
subscribe is left out of the stream's acknowledgment, so the host knows it will hear nothing.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ServerEvent,
    ToolsListChanged,
)

from nexus_gateway.errors import NexusError

logger = logging.getLogger(__name__)

_EVENTS: dict[str, ServerEvent] = {
    "tools": ToolsListChanged(),
    "resources": ResourcesListChanged(),
    "prompts": PromptsListChanged(),
}


class Subscriber(Protocol):
    """What one listen stream holds: the URIs it is subscribed to."""

    subscriptions: set[str]


class Subscriptions(Protocol):
    """The gateway's upstream subscriptions, shared by every host that wants a URI."""

    def listener(self) -> Subscriber: ...

    async def subscribe(self, host: Any, uri: str) -> None: ...

    async def release(self, host: Any) -> None: ...


class Listeners:
    """Serves `subscriptions/listen` on the front; `publish` is the bus every stream reads."""

    def __init__(self, bus: InMemorySubscriptionBus, subscriptions: Subscriptions) -> None:
        self.bus = bus
        self._subscriptions = subscriptions
        self._handler = ListenHandler(bus)

    async def changed(self, lists: frozenset[str]) -> None:
        for name in sorted(lists):
            await self.bus.publish(_EVENTS[name])

    async def listen(
        self, ctx: ServerRequestContext[Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """One stream: subscribe upstream to its URIs, serve it until it ends, then let them go."""
        wanted = params.notifications.resource_subscriptions or []
        host = self._subscriptions.listener()
        try:
            for uri in dict.fromkeys(wanted):
                try:
                    await self._subscriptions.subscribe(host, uri)
                except NexusError as exc:
                    logger.info("a listen stream asked for %s, which cannot be subscribed to: %s", uri, exc)
            honored = [uri for uri in wanted if uri in host.subscriptions] or None
            notifications = params.notifications.model_copy(update={"resource_subscriptions": honored})
            return await self._handler(ctx, params.model_copy(update={"notifications": notifications}))
        finally:
            with anyio.CancelScope(shield=True):
                await self._subscriptions.release(host)

    def close(self) -> None:
        """End every open stream gracefully (the gateway is shutting down)."""
        self._handler.close()
