"""What an upstream sends the gateway, routed to the host it is meant for.

An upstream may, while it serves a call, ask the client for input (`sampling/createMessage`,
`elicitation/create`, `roots/list`), report progress and send log messages; between calls it may
log and tell subscribers that a resource changed. The gateway is that client, for many hosts at
once: each upstream has a `CallRouter` that knows which host calls are in flight on it, and hands
every such message to the host of that call (a `HostLink`, implemented by the front) or, outside
any call, to the hosts the front knows (`HostDirectory`).

On stdio the protocol does not say which of several concurrent calls a server-to-client request
belongs to, so calls from hosts that can be asked for input (they declared sampling, elicitation
or roots) run on one upstream for one host at a time; calls from the same host, and from hosts
that declared none of these, stay concurrent.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp.client.session import ClientRequestContext

from nexus_gateway.runtime._deadline import CallDeadline, Deadline

logger = logging.getLogger(__name__)

HostAnswer = types.InputResponse | types.ErrorData
_ELICITATIONS_KEPT = 256
"""URL elicitations remembered per upstream until they complete (the oldest are forgotten first)."""
Send = Callable[[types.ClientRequest, str], Awaitable[None]]
"""Send a request whose answer is empty to an upstream (the string says what it is, for errors)."""


class HostLink(Protocol):
    """The host side of one upstream call."""

    @property
    def key(self) -> object:
        """The host's identity: calls with the same key come from the same host."""
        ...

    @property
    def asks_host(self) -> bool:
        """Whether the host can be asked for input (then its calls are routed exclusively)."""
        ...

    async def request(self, request: types.InputRequest) -> HostAnswer: ...

    async def log(self, params: types.LoggingMessageNotificationParams) -> None: ...

    async def progress(self, progress: float, total: float | None, message: str | None) -> None: ...

    async def elicitation_complete(self, params: types.ElicitCompleteNotificationParams) -> None:
        """A URL elicitation this host was sent has completed (the upstream says so, maybe after the call)."""
        ...


class AnsweringLink:
    """A host link that takes a call's result the moment the upstream's answer is read, before the
    gateway's bookkeeping for the call unwinds (the stdio fast path writes it to the host from there:
    the host waits for nothing else). Only a direct call answers early; the call still returns the
    same result afterwards, for metrics and the rest."""

    def answer(self, result: dict[str, Any], rest: bytes | None = None) -> bool:
        """Whether `result` reached the host now (then the caller must not answer again). `rest` is the
        upstream's answer line after its id, when it was written so that splicing re-addresses it."""
        return False


class HostDirectory(Protocol):
    """The hosts connected to the gateway, for what an upstream sends outside any call."""

    def fallback(self) -> HostLink | None:
        """The host to ask when no call is in flight (the most recently active one), if any."""
        ...

    async def log(self, params: types.LoggingMessageNotificationParams) -> None: ...

    async def resource_updated(self, server: str, uri: str) -> None: ...

    async def upstream_connected(self, server: str, capabilities: types.ServerCapabilities, send: Send) -> None:
        """`server` has (re)connected and is about to be reported healthy: tell it, with `send`, what the
        hosts asked of it (log level, resource subscriptions)."""
        ...


class _NoHosts:
    def fallback(self) -> HostLink | None:
        return None

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        return None

    async def resource_updated(self, server: str, uri: str) -> None:
        return None

    async def upstream_connected(self, server: str, capabilities: types.ServerCapabilities, send: Send) -> None:
        return None


class Switchboard:
    """Pool-wide: the host directory the front installs, and one router per upstream."""

    def __init__(self) -> None:
        self.hosts: HostDirectory = _NoHosts()

    def router(self, server: str) -> CallRouter:
        return CallRouter(server, self)


@dataclass
class InFlight:
    """One upstream call while it runs: its host (if any) and its deadline."""

    link: HostLink | None
    deadline: Deadline

    async def progressed(self, progress: float, total: float | None, message: str | None) -> None:
        self.deadline.progressed()
        if self.link is not None:
            await self.link.progress(progress, total, message)


class _HostGate:
    """Admits calls from one host at a time (any number of them); other hosts wait their turn."""

    def __init__(self) -> None:
        self._owner: object = None
        self._count = 0
        self._released = anyio.Event()

    async def acquire(self, key: object) -> None:
        while self._owner is not None and self._owner is not key:
            await self._released.wait()
        self._owner = key
        self._count += 1

    def release(self) -> None:
        self._count -= 1
        if not self._count:
            self._owner = None
            self._released.set()
            self._released = anyio.Event()


class CallRouter:
    def __init__(self, server: str, switchboard: Switchboard) -> None:
        self.server = server
        self._switchboard = switchboard
        self._calls: list[InFlight] = []
        self._gate = _HostGate()
        self._elicitations: OrderedDict[str, HostLink] = OrderedDict()

    @asynccontextmanager
    async def call(self, link: HostLink | None, deadline: CallDeadline) -> AsyncIterator[InFlight]:
        """Register a call for its whole duration (after waiting for the gate, bounded by the hard maximum)."""
        gated = link is not None and link.asks_host
        if gated:
            assert link is not None
            with anyio.fail_after(deadline.hard):
                await self._gate.acquire(link.key)
        call = self.enter(link, deadline)
        try:
            yield call
        finally:
            self.leave(call)
            if gated:
                self._gate.release()

    def enter(self, link: HostLink | None, deadline: Deadline) -> InFlight:
        """Register a call that needs no gate (its host cannot be asked for input) until `leave`."""
        call = InFlight(link, deadline)
        self._calls.append(call)
        return call

    def leave(self, call: InFlight) -> None:
        self._calls.remove(call)

    def client_callbacks(self) -> dict[str, Any]:
        """Keyword arguments for `mcp.Client`: the gateway declares sampling (with context and tools),
        elicitation (form and URL) and roots upstream, and answers for the host of the call."""
        return {
            "sampling_callback": self._sampling,
            "sampling_capabilities": types.SamplingCapability(
                context=types.SamplingContextCapability(), tools=types.SamplingToolsCapability()
            ),
            "elicitation_callback": self._elicitation,
            "list_roots_callback": self._roots,
            "logging_callback": self.log,
        }

    async def _sampling(self, context: ClientRequestContext, params: types.CreateMessageRequestParams) -> Any:
        return await self._ask(types.CreateMessageRequest(params=params))

    async def _elicitation(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> Any:
        return await self._ask(types.ElicitRequest(params=params))

    async def _roots(self, context: ClientRequestContext) -> Any:
        return await self._ask(types.ListRootsRequest())

    async def _ask(self, request: types.InputRequest) -> HostAnswer:
        calls = [call for call in self._calls if call.link is not None]
        askable = [call for call in calls if call.link is not None and call.link.asks_host] or calls
        if askable:
            call = askable[-1]  # the gate makes every askable call one host's
            assert call.link is not None
            self._note_elicitation(request, call.link)
            with call.deadline.paused():
                return await call.link.request(request)
        link = self._switchboard.hosts.fallback()
        if link is None:
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message=f"No host connected to nexus-gateway can answer {request.method} from {self.server!r} now.",
            )
        self._note_elicitation(request, link)
        return await link.request(request)

    def _note_elicitation(self, request: types.InputRequest, link: HostLink) -> None:
        """Remember which host a URL elicitation went to, for its `notifications/elicitation/complete`."""
        params = request.params if isinstance(request, types.ElicitRequest) else None
        if isinstance(params, types.ElicitRequestURLParams) and params.elicitation_id:
            self._elicitations[params.elicitation_id] = link
            while len(self._elicitations) > _ELICITATIONS_KEPT:
                self._elicitations.popitem(last=False)

    async def elicitation_complete(self, params: types.ElicitCompleteNotificationParams) -> None:
        link = self._elicitations.pop(params.elicitation_id, None)
        if link is None:
            logger.debug("%s completed elicitation %r, which no host was sent", self.server, params.elicitation_id)
            return
        try:
            await link.elicitation_complete(params)
        except Exception as exc:  # boundary: a host that has gone must not break the upstream's session
            logger.debug("could not tell a host that elicitation %r completed: %s", params.elicitation_id, exc)

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        """A log message of the upstream: to the hosts of the calls in flight, else to every host."""
        tag = f"{self.server}/{params.logger}" if params.logger else self.server
        tagged = params.model_copy(update={"logger": tag})
        links = {id(call.link.key): call.link for call in self._calls if call.link is not None}
        if not links:
            await self._switchboard.hosts.log(tagged)
            return
        for link in links.values():
            await link.log(tagged)

    async def resource_updated(self, uri: str) -> None:
        await self._switchboard.hosts.resource_updated(self.server, uri)

    async def connected(self, capabilities: types.ServerCapabilities, send: Send) -> None:
        await self._switchboard.hosts.upstream_connected(self.server, capabilities, send)
