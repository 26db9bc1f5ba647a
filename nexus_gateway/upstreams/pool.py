"""UpstreamPool: one supervised MCP client session per upstream server.

Each upstream has a supervisor task that connects (stdio, SSE or streamable HTTP through the `mcp`
SDK), lists its tools, resources and prompts, and waits for the connection to end. When it ends
(crash, kill, network) or fails to start, the upstream is marked unhealthy and reconnected with
exponential backoff. A failing upstream never blocks the others: starts run concurrently (up to
`max_concurrent_starts` at once), and one that takes longer than `start_timeout` is reported as not
started and gives up its start slot, but goes on (until `START_GRACE` times `start_timeout`).
"""

from __future__ import annotations

import logging
import math
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

from nexus_gateway import tracing
from nexus_gateway.config import GatewayConfig, NexusSettings, RemoteServer, ServerSpec, StdioServer, default_state_dir
from nexus_gateway.errors import (
    UpstreamError,
    UpstreamNeedsAuthorization,
    UpstreamProtocolError,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from nexus_gateway.runtime._deadline import CallDeadline, TimerDeadline
from nexus_gateway.runtime._watched import WatchedTransport
from nexus_gateway.upstreams._direct import DirectCalls
from nexus_gateway.upstreams._prelaunch import Launch
from nexus_gateway.upstreams.callbacks import AnsweringLink, HostLink, Switchboard
from nexus_gateway.upstreams.oauth import OAuthUpstreams
from nexus_gateway.upstreams.oauth.provider import UpstreamAuth
from nexus_gateway.upstreams.oauth.signin import GatewaySignIn
from nexus_gateway.upstreams.remote import open_remote
from nexus_gateway.upstreams.start_order import load_start_times, save_start_times, slowest_first
from nexus_gateway.upstreams.stdio_client import StdioCommand, stdio_upstream

if TYPE_CHECKING:
    from nexus_gateway.state import StartTimes

logger = logging.getLogger(__name__)

_HEALTHY_RESET_AFTER = 5.0
"""A connection that lived this long resets the backoff; a crash loop keeps backing off."""
START_GRACE = 4
"""A start past `start_timeout` is reported as not started (wait_ready goes on without it, its start slot is
freed) but goes on: it is abandoned, its process ended and a new start made, only after this many times
`start_timeout`. A slow start (a cold `npx`, a loaded machine) that was killed at its deadline would lose all its
work and start again, slower still."""
_PAGE_CAP = 50
_WIRE_RESULT = TypeAdapter(dict[str, Any])


OpenTransport = Callable[[], AbstractAsyncContextManager[Any]]
"""Opens a client transport (read and write streams) to an upstream in place of the one its config entry names:
the seam for an in-process upstream in fast tests (tests/fakes.py)."""


class UpstreamState(StrEnum):
    STARTING = "starting"
    HEALTHY = "healthy"
    UNHEALTHY = "unhealthy"
    NEEDS_AUTHORIZATION = "needs authorization"
    """A remote upstream that asks for an OAuth sign-in: it waits for one (`auth login`), it is not restarted."""
    STOPPED = "stopped"


@dataclass(frozen=True)
class UpstreamStatus:
    name: str
    transport: str
    state: UpstreamState
    tools: int
    restarts: int
    last_error: str | None
    garbage_lines: int


def _dump(model: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


OnListing = Callable[["Upstream"], Awaitable[None]]


class Upstream:
    """One upstream server and the supervisor that keeps a session to it open."""

    def __init__(
        self,
        name: str,
        spec: ServerSpec,
        settings: NexusSettings,
        on_listing: OnListing,
        switchboard: Switchboard | None = None,
        *,
        transport: OpenTransport | None = None,
        oauth: tuple[UpstreamAuth, GatewaySignIn] | None = None,
    ) -> None:
        self.name = name
        self.spec = spec
        self._open_override = transport
        self.auth: UpstreamAuth | None = oauth[0] if oauth is not None else None
        self.sign_in: GatewaySignIn | None = oauth[1] if oauth is not None else None
        """How this remote upstream signs in when it asks for OAuth (upstreams/oauth/), None for the others."""
        self.settings = settings
        self.call_timeout = spec.call_timeout or settings.call_timeout
        self.call_timeout_max = max(spec.call_timeout_max or settings.call_timeout_max, self.call_timeout)
        self.router = (switchboard or Switchboard()).router(name)
        self.start_timeout = spec.start_timeout or settings.start_timeout
        self.tools: list[dict[str, Any]] = []
        self.resources: list[dict[str, Any]] = []
        self.resource_templates: list[dict[str, Any]] = []
        self.prompts: list[dict[str, Any]] = []
        self.state = UpstreamState.STARTING
        self.last_error: str | None = None
        self.restarts = 0
        self.garbage_lines = 0
        self._on_listing = on_listing
        self._client: Client | None = None
        self._relist = anyio.Event()
        self._ready = anyio.Event()
        self._settled = anyio.Event()
        """Set once the first start attempt has ended (connected, failed or abandoned), not when it is only late."""
        self._failed_lists: set[str] = set()
        """Optional lists (e.g. resources/templates/list) that failed on this connection, logged once."""
        self.start_slots: anyio.Semaphore | None = None
        """Shared by the pool: how many upstreams may be starting at once."""
        self._healthy_at: float | None = None
        self.first_start_s: float | None = None
        """Seconds the first successful start took, from its start slot to its tools listed (`start_order.py`)."""
        self.tracing = bool(settings.tracing)
        """Upstream calls are CLIENT spans (nexus_gateway/tracing.py); off, no span is made."""
        self.direct = (
            DirectCalls(name, self.router.log)
            if settings.fast_path and not settings.tracing and isinstance(spec, StdioServer)
            else None
        )
        """tools/call without the SDK's client dispatch (stdio upstreams, `fast_path` on; `_direct.py`)."""

    @property
    def transport(self) -> str:
        if self._open_override is not None:
            return "in-process"
        return "stdio" if isinstance(self.spec, StdioServer) else self.spec.transport

    def status(self) -> UpstreamStatus:
        return UpstreamStatus(
            self.name, self.transport, self.state, len(self.tools), self.restarts, self.last_error, self.garbage_lines
        )

    async def wait_started(self) -> None:
        """Return once the first start attempt has succeeded or failed, or is late (past `start_timeout`)."""
        await self._ready.wait()

    async def wait_settled(self) -> None:
        """Return once the first start attempt has ended: connected, failed, or abandoned (START_GRACE)."""
        await self._settled.wait()

    # -- supervision ---------------------------------------------------------------------------

    async def supervise(self) -> None:
        """Connect, serve, reconnect with backoff; runs until cancelled."""
        backoff = self.settings.restart_backoff_initial
        while True:
            self._healthy_at = None
            self._failed_lists = set()
            try:
                await self._serve_one_connection()
                error = "connection closed"
            except anyio.get_cancelled_exc_class():
                raise
            except Exception as exc:  # boundary: any failure of one upstream stays with that upstream
                error = _describe(exc, self.spec)
            if self.auth is not None and self.auth.required is not None and self.state is not UpstreamState.STOPPED:
                await self._wait_for_sign_in()
                backoff = self.settings.restart_backoff_initial
                continue
            self._mark_down(error)
            self._ready.set()
            self._settled.set()
            if self._healthy_at is not None and time.monotonic() - self._healthy_at > _HEALTHY_RESET_AFTER:
                backoff = self.settings.restart_backoff_initial  # it served a while: not a crash loop
            logger.warning("upstream %s is unavailable (%s); reconnecting in %.2fs", self.name, error, backoff)
            await anyio.sleep(backoff)
            backoff = min(backoff * 2, self.settings.restart_backoff_max)
            self.restarts += 1
            # it stays unhealthy, with its last error, until a reconnect succeeds: "starting" is the first start

    async def _wait_for_sign_in(self) -> None:
        """Wait, as "needs authorization", for a sign-in (`auth login`, or one the gateway ran); then reconnect."""
        assert self.auth is not None
        self._client = None
        self.state = UpstreamState.NEEDS_AUTHORIZATION
        self.last_error = self.auth.needs_sign_in()
        self._ready.set()
        self._settled.set()
        logger.warning("%s", self.last_error)
        await self.auth.wait_signed_in()
        logger.info("upstream %s: a sign-in is there; connecting", self.name)
        self.state = UpstreamState.STARTING

    async def sign_in_through(self, link: HostLink, spawn: Callable[..., object]) -> bool:
        """Ask the host of a call to sign in to this upstream (a URL elicitation); True once it is connected."""
        if self.sign_in is None or self.state is not UpstreamState.NEEDS_AUTHORIZATION:
            return self.connected
        return await self.sign_in.ask(link, spawn, lambda: self.connected)

    async def begin_sign_in(self, spawn: Callable[..., object]) -> str:
        """The link of a sign-in the gateway runs itself for this upstream (started in `spawn`'s task group)."""
        if self.sign_in is None:
            raise UpstreamUnavailable(self.name, f"Upstream server {self.name!r} does not sign in with OAuth.")
        return await self.sign_in.begin(spawn)

    async def _serve_one_connection(self) -> None:
        """One connection, from a start slot (held until the upstream is healthy or has failed) to its end."""
        slot = _Slot(self.start_slots)
        await slot.acquire()
        try:
            await self._connect_and_serve(slot)
        finally:
            slot.release()

    async def _connect_and_serve(self, slot: _Slot) -> None:
        # One scope around the whole connection: its deadline bounds the start (START_GRACE x start_timeout),
        # then is lifted. (A timeout scope around entering the client alone would be exited before the
        # client's task group, which anyio forbids.) At `start_timeout` the start is only reported late.
        grace = self.start_timeout * START_GRACE
        began = time.monotonic()
        with anyio.CancelScope(deadline=anyio.current_time() + grace) as start_scope:
            async with anyio.create_task_group() as starting:
                late = anyio.CancelScope()
                starting.start_soon(self._report_late, slot, late)
                watched = WatchedTransport(self._open_transport(), on_garbage=self._on_garbage)
                callbacks = self.router.client_callbacks()
                mode = self.spec.connect_mode if isinstance(self.spec, RemoteServer) else "legacy"
                async with Client(
                    watched, mode=mode, cache=None, message_handler=self._on_message, **callbacks
                ) as client:
                    await self._refresh(client)
                    await self.router.connected(client.server_capabilities, partial(self._send_on, client))
                    start_scope.deadline = math.inf
                    late.cancel()
                    slot.release()
                    self._client = client
                    self._healthy_at = time.monotonic()
                    if self.first_start_s is None:
                        self.first_start_s = self._healthy_at - began
                    self.state = UpstreamState.HEALTHY
                    self.last_error = None
                    self._ready.set()
                    self._settled.set()
                    logger.info(
                        "upstream %s connected over %s with %d tools", self.name, self.transport, len(self.tools)
                    )
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(self._relist_loop, client)
                        await watched.closed.wait()
                        self._mark_down("connection closed")
                        tg.cancel_scope.cancel()
        if start_scope.cancelled_caught:
            raise TimeoutError

    async def _report_late(self, slot: _Slot, scope: anyio.CancelScope) -> None:
        """Once `start_timeout` has passed without a connection: free the start slot and report the upstream
        as not started (wait_ready stops waiting for it). The start itself goes on (START_GRACE)."""
        with scope:
            await anyio.sleep(self.start_timeout)
            if scope.cancel_called:  # connected meanwhile: the cancellation is delivered at the next checkpoint
                return
            slot.release()
            self._mark_down("did not start in time")
            self._ready.set()
            logger.warning(
                "upstream %s did not start within %gs; still waiting for it, %gs at most",
                self.name,
                self.start_timeout,
                self.start_timeout * START_GRACE,
            )

    def _mark_down(self, error: str) -> None:
        self._client = None
        if self.state is not UpstreamState.STOPPED:
            self.state = UpstreamState.UNHEALTHY
            self.last_error = error

    async def _relist_loop(self, client: Client) -> None:
        while True:
            await self._relist.wait()
            self._relist = anyio.Event()
            try:
                with anyio.fail_after(self.start_timeout):
                    await self._refresh(client)
            except (MCPError, TimeoutError) as exc:
                logger.warning("upstream %s: re-listing tools failed: %s", self.name, _describe(exc))

    def _open_transport(self) -> Any:
        if self._open_override is not None:
            return self._open_override()
        spec = self.spec
        if isinstance(spec, StdioServer):
            launch = Launch.of_server(spec, self.settings)
            env = dict(launch.env)
            if sys.platform == "win32":  # pragma: no cover - the SDK's transport knows Job Objects and PATHEXT
                params = StdioServerParameters(command=spec.command, args=spec.args, env=env, cwd=spec.cwd)
                return stdio_client(params, errlog=sys.stderr)
            command = StdioCommand(command=launch.command, args=list(launch.args), env=env, cwd=launch.cwd)
            cap = spec.max_result_bytes or self.settings.max_result_bytes
            return stdio_upstream(command, server=self.name, max_bytes=cap, errlog=sys.stderr, direct=self.direct)
        assert isinstance(spec, RemoteServer)
        return open_remote(spec, timeout=self.start_timeout, auth=self.auth)

    async def _refresh(self, client: Client) -> None:
        """List what the server declares. Tools are the point: their listing failing fails the connection.
        Resources, templates and prompts are optional: one that fails is logged and served as empty."""
        capabilities = client.server_capabilities
        self.tools = [_dump(tool) for tool in await _all_pages(client.list_tools)] if capabilities.tools else []
        resources, prompts = bool(capabilities.resources), bool(capabilities.prompts)
        self.resources = await self._optional("resources/list", client.list_resources, resources)
        templates = await self._optional("resources/templates/list", client.list_resource_templates, resources)
        self.resource_templates = templates
        self.prompts = await self._optional("prompts/list", client.list_prompts, prompts)
        await self._on_listing(self)

    async def _optional(self, method: str, fetch: Callable[..., Awaitable[Any]], declared: bool) -> list[Any]:
        if not declared:
            return []
        try:
            return [_dump(item) for item in await _all_pages(fetch)]
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                raise
            if method not in self._failed_lists:  # once per connection: a relist fails the same way
                self._failed_lists.add(method)
                logger.warning("upstream %s: %s failed (%s); serving it as empty", self.name, method, exc)
            return []

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification | types.ResourceListChangedNotification):
            logger.info("upstream %s changed its list; re-listing", self.name)
            self._relist.set()
        elif isinstance(message, types.PromptListChangedNotification):
            self._relist.set()
        elif isinstance(message, types.ResourceUpdatedNotification):
            await self.router.resource_updated(str(message.params.uri))
        elif isinstance(message, types.ElicitCompleteNotification):
            await self.router.elicitation_complete(message.params)

    def _on_garbage(self, exc: Exception) -> None:
        self.garbage_lines += 1
        if self.garbage_lines <= 3 or self.garbage_lines % 100 == 0:
            logger.warning("upstream %s wrote a non-protocol line on stdout (%d so far)", self.name, self.garbage_lines)

    # -- requests ------------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """Whether a request sent now would be served (what `ensure_connected` checks, without raising)."""
        return self._client is not None and self.state is UpstreamState.HEALTHY

    def ensure_connected(self) -> None:
        """Raise `UpstreamUnavailable`, with the reason, unless the upstream is connected."""
        self._connected()

    def _connected(self) -> Client:
        if self.state is UpstreamState.NEEDS_AUTHORIZATION and self.auth is not None:
            raise UpstreamNeedsAuthorization(self.name, self.auth.needs_sign_in())
        if self._client is None or self.state is not UpstreamState.HEALTHY:
            reason = f": {self.last_error}" if self.last_error else ""
            raise UpstreamUnavailable(
                self.name,
                f"Upstream server {self.name!r} is {self.state.value}{reason}. "
                "It is being restarted; try again in a few seconds.",
            )
        return self._client

    @property
    def capabilities(self) -> types.ServerCapabilities | None:
        """What the upstream declared, while it is connected."""
        return self._client.server_capabilities if self._client is not None else None

    @asynccontextmanager
    async def _request(
        self, what: str, timeout: float | None, deadline: CallDeadline | None = None
    ) -> AsyncIterator[Client]:
        client = self._connected()
        deadline = deadline or CallDeadline(timeout or self.call_timeout)
        try:
            with deadline:
                yield client
        except TimeoutError:
            raise self.timed_out(what, deadline, hard=deadline.expired_hard) from None
        except MCPError as exc:
            raise self.failed(what, exc, client) from exc

    def timed_out(self, what: str, deadline: CallDeadline | TimerDeadline, *, hard: bool) -> UpstreamTimeout:
        """The error of a request whose `deadline` ran out (`hard`: at its hard maximum, else idle)."""
        if hard:
            message = f"Upstream server {self.name!r} ran {what} past the {deadline.hard:g}s maximum."
        else:
            message = f"Upstream server {self.name!r} did not answer {what} within {deadline.idle:g}s."
        return UpstreamTimeout(self.name, message)

    def failed(self, what: str, exc: MCPError, client: Client | None) -> UpstreamError:
        """The error of a request the upstream answered with `exc`, sent on `client`'s connection (a closed
        connection marks the upstream down, unless it has already reconnected)."""
        if exc.code == types.CONNECTION_CLOSED:
            if self.auth is not None and self.auth.required is not None:  # the sign-in was refused mid-session
                return UpstreamNeedsAuthorization(self.name, self.auth.needs_sign_in())
            if client is not None and self._client is client:
                self._mark_down("connection closed")
            return UpstreamUnavailable(
                self.name, f"Upstream server {self.name!r} closed the connection during {what}; it is restarting."
            )
        return UpstreamProtocolError(self.name, f"Upstream server {self.name!r} rejected {what}: {exc}")

    @property
    def client(self) -> Client | None:
        """The connection requests go out on now (None while down)."""
        return self._client

    async def call_tool(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        timeout: float | None = None,
        link: HostLink | None = None,
        meta: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Call a tool; the result stays in wire form (a `CallToolResult` as a dict).

        The gateway forwards results, it does not read them: skipping the result model and the
        output-schema check (the host does both) saves a fifth of the gateway's time per call.
        What the upstream sends during the call (progress, logs, requests for input) goes to `link`;
        progress restarts the call timeout, up to `call_timeout_max`. With tracing on, the call is a
        CLIENT span whose context the upstream gets in `_meta` (nexus_gateway/tracing.py).
        """
        if self.tracing:
            with tracing.client_span("tools/call", tool, meta, **self._span_attributes()) as (span, carried):
                result = await self._call_tool(tool, arguments, timeout, link, carried)
                if result.get("isError") is True:
                    tracing.failed(span, "tool_error")
                return result
        return await self._call_tool(tool, arguments, timeout, link, meta)

    def _span_attributes(self) -> dict[str, Any]:
        transport = {"stdio": "pipe", "http": "tcp", "sse": "tcp"}.get(self.transport)
        return {"transport": transport, "upstream": self.name}

    async def _call_tool(
        self,
        tool: str,
        arguments: dict[str, Any],
        timeout: float | None,
        link: HostLink | None,
        meta: dict[str, Any] | None,
    ) -> dict[str, Any]:
        deadline = CallDeadline(timeout or self.call_timeout, self.call_timeout_max)
        async with (
            self.router.call(link, deadline) as call,
            self._request(f"the call to {tool!r}", timeout, deadline) as client,
        ):
            if self.direct is not None and self.direct.ready:
                answer = link.answer if isinstance(link, AnsweringLink) else None
                return await self.direct.call(tool, arguments, meta, call.progressed, answer)
            params = types.CallToolRequestParams(name=tool, arguments=arguments, _meta=meta or None)  # type: ignore[arg-type]
            request = types.CallToolRequest(params=params)
            return await client.session.send_request(request, _WIRE_RESULT, progress_callback=call.progressed)  # type: ignore[type-var]
        raise AssertionError("unreachable")  # pragma: no cover

    async def read_resource(self, uri: str, *, link: HostLink | None = None) -> types.ReadResourceResult:
        """Read a resource; what the upstream asks the host meanwhile goes to `link`, as for a call."""
        if self.tracing:
            with tracing.client_span("resources/read", None, None, uri=uri, **self._span_attributes()):
                return await self._read_resource(uri, link)
        return await self._read_resource(uri, link)

    async def _read_resource(self, uri: str, link: HostLink | None) -> types.ReadResourceResult:
        deadline = CallDeadline(self.call_timeout, self.call_timeout_max)
        async with self.router.call(link, deadline), self._request(f"reading {uri!r}", None, deadline) as client:
            return await client.read_resource(uri)
        raise AssertionError("unreachable")  # pragma: no cover

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None, *, link: HostLink | None = None
    ) -> types.GetPromptResult:
        if self.tracing:
            with tracing.client_span("prompts/get", name, None, **self._span_attributes()):
                return await self._get_prompt(name, arguments, link)
        return await self._get_prompt(name, arguments, link)

    async def _get_prompt(
        self, name: str, arguments: dict[str, str] | None, link: HostLink | None
    ) -> types.GetPromptResult:
        deadline = CallDeadline(self.call_timeout, self.call_timeout_max)
        async with self.router.call(link, deadline), self._request(f"prompt {name!r}", None, deadline) as client:
            return await client.get_prompt(name, arguments)
        raise AssertionError("unreachable")  # pragma: no cover

    async def complete(self, params: types.CompleteRequestParams) -> types.CompleteResult:
        """Forward a completion/complete whose reference is already in the upstream's names."""
        request = types.CompleteRequest(params=params)
        async with self._request("completion/complete", None) as client:
            return await client.session.send_request(request, types.CompleteResult)
        raise AssertionError("unreachable")  # pragma: no cover

    async def send(self, request: types.ClientRequest, what: str) -> None:
        """Forward a request whose answer is empty (resources/subscribe, logging/setLevel, ...)."""
        async with self._request(what, None) as client:
            await client.session.send_request(request, types.EmptyResult)

    async def _send_on(self, client: Client, request: types.ClientRequest, what: str) -> None:
        """`send` on a connection not yet reported healthy (what the hosts asked of it, again)."""
        try:
            with anyio.fail_after(self.call_timeout):
                await client.session.send_request(request, types.EmptyResult)
        except TimeoutError:
            raise UpstreamTimeout(self.name, f"Upstream server {self.name!r} did not answer {what}.") from None
        except MCPError as exc:
            raise UpstreamProtocolError(self.name, f"Upstream server {self.name!r} rejected {what}: {exc}") from exc

    async def notify(self, notification: types.ClientNotification) -> None:
        if self._client is not None:
            await self._client.session.send_notification(notification)


async def _all_pages(fetch: Callable[..., Awaitable[Any]]) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(_PAGE_CAP):
        page = await fetch(cursor=cursor)
        for attr in ("tools", "resources", "resource_templates", "prompts"):
            if hasattr(page, attr):
                items.extend(getattr(page, attr))
                break
        cursor = page.next_cursor
        if not cursor:
            break
    return items


def _describe(exc: BaseException, spec: ServerSpec | None = None) -> str:
    if isinstance(exc, TimeoutError):
        return "did not start in time"
    if isinstance(exc, BaseExceptionGroup):
        leaves = [_describe(inner, spec) for inner in exc.exceptions]
        return "; ".join(dict.fromkeys(leaves))
    if isinstance(exc, FileNotFoundError) and isinstance(spec, StdioServer) and exc.filename is not None:
        # Spawning reports a missing executable or working directory by its path; anything else is not the command.
        if str(exc.filename) == spec.command:
            return f"command not found: {spec.command}"
        if spec.cwd is not None and str(exc.filename) == str(spec.cwd):
            return f"working directory not found: {spec.cwd}"
        return f"file not found: {exc.filename}"
    text = str(exc) or type(exc).__name__
    return text if len(text) < 300 else text[:300] + "..."


class _Slot:
    """A start slot of the pool's semaphore, released once (when the start ends, whichever way)."""

    def __init__(self, semaphore: anyio.Semaphore | None) -> None:
        self._semaphore = semaphore
        self._held = False

    async def acquire(self) -> None:
        if self._semaphore is not None:
            await self._semaphore.acquire()
            self._held = True

    def release(self) -> None:
        if self._held and self._semaphore is not None:
            self._held = False
            self._semaphore.release()


class UpstreamPool:
    """Every configured upstream, started concurrently and supervised until the pool closes."""

    def __init__(
        self,
        config: GatewayConfig,
        on_listing: OnListing,
        transports: Mapping[str, OpenTransport] | None = None,
        *,
        shared_starts: StartTimes | None = None,
    ) -> None:
        """`shared_starts`: start times shared by replicas (the state store's), beside `starts.json`."""
        self.switchboard = Switchboard()
        self._shared_starts = shared_starts
        opened = transports or {}
        self.oauth = OAuthUpstreams(config, default_state_dir(config))
        self.upstreams = {
            name: Upstream(
                name,
                spec,
                config.nexus,
                on_listing,
                self.switchboard,
                transport=opened.get(name),
                oauth=self.oauth.of(name, spec) if name not in opened else None,
            )
            for name, spec in config.enabled_servers.items()
        }
        self._settings = config.nexus
        self._on_listing = on_listing
        self._transports = opened
        self._slots = anyio.Semaphore(config.nexus.max_concurrent_starts)
        self._state_dir = default_state_dir(config)
        self._running: dict[str, tuple[anyio.CancelScope, anyio.Event]] = {}
        self._tg: anyio.abc.TaskGroup | None = None

    async def __aenter__(self) -> UpstreamPool:
        self._stack = AsyncExitStack()
        self._tg = await self._stack.enter_async_context(anyio.create_task_group())
        known = load_start_times(self._state_dir)
        if self._shared_starts is not None:
            known |= self._shared_starts.load()
        for name in slowest_first(self.upstreams, known):
            self._start(self.upstreams[name])
        self._tg.start_soon(self._remember_start_times, name="start-times")
        return self

    async def _remember_start_times(self) -> None:
        """Once every first start has ended, record how long each took: the next start begins with the slowest."""
        await self.wait_settled()
        took = {name: up.first_start_s for name, up in self.upstreams.items() if up.first_start_s is not None}
        if took:
            save_start_times(self._state_dir, took)
            if self._shared_starts is not None:
                self._shared_starts.save(took)

    def _start(self, upstream: Upstream) -> None:
        assert self._tg is not None
        upstream.start_slots = self._slots
        scope, done = anyio.CancelScope(), anyio.Event()
        self._running[upstream.name] = (scope, done)

        async def supervise() -> None:
            try:
                with scope:
                    await upstream.supervise()
            finally:
                done.set()

        self._tg.start_soon(supervise, name=f"upstream:{upstream.name}")

    def add(self, name: str, spec: ServerSpec) -> Upstream:
        """Start supervising one more upstream (a config reload added it, or it was enabled)."""
        if name in self.upstreams:
            raise ValueError(f"upstream {name!r} is already running")
        transport = self._transports.get(name)
        oauth = self.oauth.of(name, spec) if transport is None else None
        upstream = Upstream(
            name, spec, self._settings, self._on_listing, self.switchboard, transport=transport, oauth=oauth
        )
        self.upstreams[name] = upstream
        self._start(upstream)
        return upstream

    async def remove(self, name: str) -> Upstream | None:
        """Stop one upstream (its process ends with its session) and forget it; None if it was not running."""
        upstream = self.upstreams.pop(name, None)
        running = self._running.pop(name, None)
        if upstream is None or running is None:
            return upstream
        upstream.state = UpstreamState.STOPPED
        scope, done = running
        scope.cancel()
        await done.wait()
        upstream._settled.set()  # nobody waits for a start that will not end
        return upstream

    async def wait_started(self) -> None:
        """Wait until every upstream has connected or failed its first attempt (each bounded by start_timeout)."""
        async with anyio.create_task_group() as tg:
            for upstream in self.upstreams.values():
                tg.start_soon(upstream.wait_started)

    async def wait_settled(self) -> None:
        """Wait until every upstream's first start has ended, late ones included (each bounded by START_GRACE
        times start_timeout)."""
        async with anyio.create_task_group() as tg:
            for upstream in list(self.upstreams.values()):
                tg.start_soon(upstream.wait_settled)

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._tg is not None
        for upstream in self.upstreams.values():
            upstream.state = UpstreamState.STOPPED
        self._tg.cancel_scope.cancel()
        await self._stack.__aexit__(None, None, None)

    def get(self, name: str) -> Upstream | None:
        return self.upstreams.get(name)

    def spawn(self, fn: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        """Run `fn` in the pool's task group until it returns or the pool closes (a sign-in the gateway runs)."""
        assert self._tg is not None
        self._tg.start_soon(fn)

    def statuses(self) -> list[UpstreamStatus]:
        return [upstream.status() for upstream in self.upstreams.values()]
