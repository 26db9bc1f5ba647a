"""What the gateway carries between hosts and upstreams besides tools/list and the call itself.

    tools/call,             -> the host link of the request: progress, logs, sampling / elicitation / roots
    resources/read,            (handshake era: requests ride the host's request; 2026-07-28: `_exchange.py`)
    prompts/get
    logging/setLevel        -> every upstream that logs (at the lowest level any host asked for);
                               each host gets messages at or above its own level, tagged `server/logger`
    completion/complete     -> the upstream of the prompt or resource template, names mapped back
    resources/(un)subscribe -> the upstream of the resource; notifications/resources/updated -> the
                               hosts that subscribed
    subscriptions/listen    -> (2026-07-28) the gateway's list changes and the updates of the URIs the
                               stream names (`_listen.py`)
    roots/list_changed      -> every upstream

`Forwarder.install` registers these on the front's `Server`; `Hosts` is the `HostDirectory` the
upstream pool uses for what arrives outside any call. An upstream that reconnects gets the log level
and the resource subscriptions the hosts asked for again.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from nexus_gateway._sdk import client_connection
from nexus_gateway.errors import NexusError, UpstreamError
from nexus_gateway.gateway import Gateway
from nexus_gateway.server._exchange import Exchanges
from nexus_gateway.server._links import LEVELS, OFF, ConnectionLink, RequestLink, asks_host, log_allowed
from nexus_gateway.server._listen import Listeners
from nexus_gateway.upstreams.callbacks import HostLink, Send
from nexus_gateway.upstreams.pool import Upstream

logger = logging.getLogger(__name__)

_RESERVED_META = "io.modelcontextprotocol/"


@dataclass(eq=False)
class _Host:
    level: str | None = None
    subscriptions: set[str] = field(default_factory=set)


def forwarded_meta(meta: Any) -> dict[str, Any] | None:
    """The host's `_meta` as it may reach an upstream: the progress token is the gateway's own (it must be
    unique on each upstream session) and the reserved `io.modelcontextprotocol/*` keys belong to the front."""
    if not meta:
        return None
    kept = {key: value for key, value in dict(meta).items() if key != "progressToken"}
    kept = {key: value for key, value in kept.items() if not key.startswith(_RESERVED_META)}
    return kept or None


class Hosts:
    """The hosts connected to the gateway: their log levels and subscriptions (handshake-era hosts by
    connection; modern-era listen streams while they are open)."""

    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway
        self._hosts: weakref.WeakKeyDictionary[Connection, _Host] = weakref.WeakKeyDictionary()
        self._listeners: list[_Host] = []
        self.events = InMemorySubscriptionBus()
        """What modern-era listen streams hear: list changes and resource updates."""
        self._recent: weakref.ref[Connection] | None = None
        self._upstream_level: str | None = None
        self._modern_level: str | None = None

    def seen(self, ctx: ServerRequestContext[Any]) -> _Host | None:
        """Note the host of a request; None on the modern era (each request stands alone there)."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return None
        connection = client_connection(ctx)  # lives as long as the client
        host = self._hosts.get(connection)
        if host is None:
            host = self._hosts[connection] = _Host()
            connection.exit_stack.push_async_callback(self._gone, connection)
        self._recent = weakref.ref(connection)
        return host

    async def _gone(self, connection: Connection) -> None:
        host = self._hosts.pop(connection, None)
        if host is not None:
            for uri in list(host.subscriptions):
                await self._drop_subscription(host, uri)

    # -- HostDirectory -------------------------------------------------------------------------

    def fallback(self) -> HostLink | None:
        connection = self._recent() if self._recent is not None else None
        if connection is None or connection not in self._hosts:
            return None
        return ConnectionLink(connection)

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        for connection, host in list(self._hosts.items()):
            if log_allowed(params.level, host.level):
                await ConnectionLink(connection).log(params)

    async def resource_updated(self, server: str, uri: str) -> None:
        for connection, host in list(self._hosts.items()):
            if uri in host.subscriptions:
                await connection.send_resource_updated(uri)
        if any(uri in listener.subscriptions for listener in self._listeners):
            await self.events.publish(ResourceUpdated(uri=uri))

    async def upstream_connected(self, server: str, capabilities: types.ServerCapabilities, send: Send) -> None:
        """Tell an upstream that (re)connected the log level and the subscriptions the hosts asked for."""
        requests: list[tuple[types.ClientRequest, str]] = []
        if self._upstream_level is not None and capabilities.logging is not None:
            level = types.SetLevelRequestParams(level=self._upstream_level)  # type: ignore[arg-type]
            requests.append((types.SetLevelRequest(params=level), "logging/setLevel"))
        if capabilities.resources is not None and capabilities.resources.subscribe:
            for uri in sorted({uri for host in self._all() for uri in host.subscriptions}):
                if self._owner(uri) == server:
                    subscribe = types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri))
                    requests.append((subscribe, f"subscribing to {uri!r}"))
        for request, what in requests:
            try:
                await send(request, what)
            except NexusError as exc:
                logger.warning("upstream %s: could not restore %s: %s", server, what, exc)

    def _owner(self, uri: str) -> str | None:
        try:
            return _subscription_upstream(self._gateway, uri).name
        except NexusError:
            return None

    # -- logging -------------------------------------------------------------------------------

    async def set_level(self, host: _Host | None, level: str) -> None:
        """A host's `logging/setLevel` (or a modern request's log level): upstreams log at the lowest level
        any host wants; each host is sent only what its own level lets through."""
        if host is not None:
            host.level = level
        elif self._modern_level is None or LEVELS.index(level) < LEVELS.index(self._modern_level):
            self._modern_level = level
        wanted = [h.level for h in self._hosts.values() if h.level is not None] + [self._modern_level]
        lowest = min((wanted_level for wanted_level in wanted if wanted_level is not None), key=LEVELS.index)
        if lowest == self._upstream_level:
            return
        self._upstream_level = lowest
        request = types.SetLevelRequest(params=types.SetLevelRequestParams(level=lowest))  # type: ignore[arg-type]
        for upstream in self._gateway.pool.upstreams.values():
            capabilities = upstream.capabilities
            if capabilities is not None and capabilities.logging is not None:
                try:
                    await upstream.send(request, "logging/setLevel")
                except UpstreamError as exc:
                    logger.warning("could not set the log level of %s: %s", upstream.name, exc)

    # -- subscriptions -------------------------------------------------------------------------

    def _all(self) -> list[_Host]:
        return [*self._hosts.values(), *self._listeners]

    def _subscribers(self, uri: str) -> int:
        return sum(uri in host.subscriptions for host in self._all())

    def listener(self) -> _Host:
        """A modern-era listen stream, holding subscriptions until `release`."""
        host = _Host()
        self._listeners.append(host)
        return host

    async def release(self, host: _Host) -> None:
        for uri in list(host.subscriptions):
            await self._drop_subscription(host, uri)
        if host in self._listeners:
            self._listeners.remove(host)

    async def subscribe(self, host: _Host, uri: str) -> None:
        upstream = _subscribable(self._gateway, uri)
        if not self._subscribers(uri):
            request = types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri))
            await upstream.send(request, f"subscribing to {uri!r}")
        host.subscriptions.add(uri)

    async def unsubscribe(self, host: _Host, uri: str) -> None:
        if uri in host.subscriptions:
            await self._drop_subscription(host, uri)

    async def _drop_subscription(self, host: _Host, uri: str) -> None:
        host.subscriptions.discard(uri)
        if self._subscribers(uri):
            return
        try:
            upstream = _subscription_upstream(self._gateway, uri)
            request = types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri))
            await upstream.send(request, f"unsubscribing from {uri!r}")
        except NexusError as exc:
            logger.debug("could not unsubscribe from %s: %s", uri, exc)


def _subscribable(gateway: Gateway, uri: str) -> Upstream:
    upstream = _subscription_upstream(gateway, uri)
    if not _subscribes(upstream):
        raise NexusError(f"Upstream server {upstream.name!r} does not support resource subscriptions.")
    return upstream


def _subscription_upstream(gateway: Gateway, uri: str) -> Upstream:
    """The upstream a subscription to `uri` goes to: the one that lists it (or a template it matches), else
    the only upstream that supports subscriptions at all (a resource may exist before any list names it,
    as the spec's own subscription scenarios expect); a NexusError when neither settles it."""
    try:
        return gateway.resource_upstream(uri)
    except NexusError:
        able = [upstream for upstream in gateway.pool.upstreams.values() if _subscribes(upstream)]
        if len(able) == 1:
            return able[0]
        if able:
            names = ", ".join(sorted(upstream.name for upstream in able))
            raise NexusError(
                f"No upstream lists the resource {uri!r}, and several support subscriptions ({names}): "
                "list resources first, so the gateway knows which one serves it."
            ) from None
        raise


def _subscribes(upstream: Upstream) -> bool:
    capabilities = upstream.capabilities
    return capabilities is not None and capabilities.resources is not None and bool(capabilities.resources.subscribe)


def _host_error(exc: NexusError) -> MCPError:
    return MCPError(code=types.INVALID_PARAMS, message=str(exc))


class Forwarder:
    """The handlers that carry a host's requests and notifications beyond tools, resources and prompts."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        existing = gateway.pool.switchboard.hosts
        self.hosts = existing if isinstance(existing, Hosts) else Hosts(gateway)
        gateway.pool.switchboard.hosts = self.hosts
        self.exchanges = Exchanges()
        self.listeners = Listeners(self.hosts.events, self.hosts)

    def install(self, server: Server[Any]) -> None:
        server.lifespan = self.lifespan
        server.add_request_handler("completion/complete", types.CompleteRequestParams, self.complete)
        server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, self.set_level)
        server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, self.subscribe)
        server.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, self.unsubscribe)
        server.add_request_handler("subscriptions/listen", types.SubscriptionsListenRequestParams, self.listen)
        server.add_notification_handler("notifications/roots/list_changed", types.NotificationParams, self.roots)
        server.middleware.append(self.capabilities)

    @asynccontextmanager
    async def lifespan(self, server: Server[Any]) -> AsyncIterator[anyio.abc.TaskGroup]:
        """Modern-era calls that wait on their host outlive the request that started them: they run here."""
        async with anyio.create_task_group() as tasks:
            try:
                yield tasks
            finally:
                self.listeners.close()
                tasks.cancel_scope.cancel()

    # -- tools/call, resources/read, prompts/get -----------------------------------------------

    async def forward(
        self, ctx: ServerRequestContext[Any], params: types.InputResponseRequestParams, call: CallFn
    ) -> Any:
        """Run `call(link, meta)` with the host side of the request wired in, in the host's era."""
        meta = forwarded_meta(params.meta)
        host = self.hosts.seen(ctx)
        if host is not None:
            return await call(RequestLink(ctx, host.level), meta)
        return await self._call_modern(ctx, params, call, meta)

    async def _call_modern(
        self, ctx: ServerRequestContext[Any], params: types.InputResponseRequestParams, call: CallFn, meta: Any
    ) -> Any:
        requested = (ctx.meta or {}).get(types.LOG_LEVEL_META_KEY)
        log_level = requested if isinstance(requested, str) and requested in LEVELS else OFF
        if log_level != OFF:
            await self.hosts.set_level(None, log_level)
        if params.request_state is not None:
            exchange = self.exchanges.resume(params.request_state)
            raw = (ctx.params or {}).get("inputResponses")
            exchange.answer(raw if isinstance(raw, dict) else None)
            return await exchange.round(ctx)
        capabilities = ctx.session.client_capabilities
        if not asks_host(capabilities) or not isinstance(ctx.lifespan_context, anyio.abc.TaskGroup):
            return await call(RequestLink(ctx, log_level), meta)

        async def work(link: HostLink) -> Any:
            return await call(link, meta)

        exchange = self.exchanges.start(ctx.lifespan_context, work, capabilities, log_level)
        return await exchange.round(ctx)

    # -- the other requests --------------------------------------------------------------------

    async def complete(self, ctx: ServerRequestContext[Any], params: types.CompleteRequestParams) -> Any:
        await self.gateway.wait_ready()
        ref = params.ref
        try:
            if isinstance(ref, types.PromptReference):
                upstream, name = self.gateway.prompt_upstream(ref.name)
                forwarded = params.model_copy(update={"ref": ref.model_copy(update={"name": name})})
            else:
                upstream = self.gateway.template_upstream(ref.uri)
                forwarded = params
            capabilities = upstream.capabilities
            if capabilities is None or capabilities.completions is None:
                return types.CompleteResult(completion=types.Completion(values=[]))
            forwarded = forwarded.model_copy(update={"meta": None})
            return await upstream.complete(forwarded)
        except NexusError as exc:
            raise _host_error(exc) from exc

    async def set_level(self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams) -> Any:
        await self.gateway.wait_ready()
        await self.hosts.set_level(self.hosts.seen(ctx), params.level)
        return types.EmptyResult()

    async def subscribe(self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams) -> Any:
        await self.gateway.wait_ready()
        host = self.hosts.seen(ctx)
        if host is None:
            raise MCPError(code=types.METHOD_NOT_FOUND, message="resources/subscribe is a handshake-era method.")
        try:
            await self.hosts.subscribe(host, str(params.uri))
        except NexusError as exc:
            raise _host_error(exc) from exc
        return types.EmptyResult()

    async def unsubscribe(self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams) -> Any:
        host = self.hosts.seen(ctx)
        if host is not None:
            await self.hosts.unsubscribe(host, str(params.uri))
        return types.EmptyResult()

    async def listen(self, ctx: ServerRequestContext[Any], params: types.SubscriptionsListenRequestParams) -> Any:
        await self.gateway.wait_ready()  # the URIs it names are known once the upstreams have listed them
        return await self.listeners.listen(ctx, params)

    async def roots(self, ctx: ServerRequestContext[Any], params: types.NotificationParams) -> None:
        self.hosts.seen(ctx)
        for upstream in self.gateway.pool.upstreams.values():
            await upstream.notify(types.RootsListChangedNotification())

    # -- capabilities --------------------------------------------------------------------------

    async def capabilities(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        """State logging, completions and resource subscriptions: the gateway serves all three whatever its
        upstreams are (log levels are kept for upstreams that start later, a completion an upstream cannot
        give is empty, a subscription it cannot take is a clear error). So `initialize` never waits for
        upstreams to start: hosts give up on a slow handshake (the Inspector after 15 s)."""
        if ctx.method not in ("initialize", "server/discover"):
            return await call_next(ctx)
        result = await call_next(ctx)
        if not isinstance(result, dict) or not isinstance(result.get("capabilities"), dict):
            return result
        capabilities = dict(result["capabilities"])
        capabilities["logging"] = {}
        capabilities["completions"] = {}
        if isinstance(capabilities.get("resources"), dict):  # the modern era: URIs named on a listen stream
            capabilities["resources"] = {**capabilities["resources"], "subscribe": True}
        return {**result, "capabilities": capabilities}


CallFn = Callable[[HostLink, dict[str, Any] | None], Awaitable[Any]]
