"""Server-to-client input for hosts on the modern protocol (2026-07-28): multi-round-trip calls.

A modern host cannot be sent a request; a server that needs input answers the call with an
`InputRequiredResult` (the requests, and an opaque `requestState`) and the host calls again with
the responses. An upstream, on the other hand, asks in the middle of its call and waits. An
`Exchange` bridges the two: the upstream call runs in the background; each round of the host's
call waits until the upstream call finishes (its result is the answer) or asks for input (an
`InputRequiredResult` whose `requestState` names the exchange). The next round delivers the
host's responses to the waiting upstream and waits again.

An exchange nobody comes back to is dropped after `_ABANDONED_AFTER` seconds without a round.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import anyio.abc
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

from nexus_gateway.server._links import log_allowed, refusal, response_type
from nexus_gateway.upstreams.callbacks import HostAnswer, HostLink

logger = logging.getLogger(__name__)

_ABANDONED_AFTER = 300.0
"""Seconds an exchange waits for the host's next round before its upstream call is cancelled."""

Work = Callable[[HostLink], Awaitable[Any]]


@dataclass
class _Ask:
    request: types.InputRequest
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: HostAnswer | None = None
    sent: bool = False


class Exchange:
    """One host call in the modern era whose upstream may ask the host for input (a `HostLink`)."""

    def __init__(self, token: str, capabilities: types.ClientCapabilities | None, log_level: str | None) -> None:
        self.token = token
        self.capabilities = capabilities
        self.log_level = log_level
        self.ctx: ServerRequestContext[Any] | None = None
        self.result: Any = None
        self.done = anyio.Event()
        self.scope = anyio.CancelScope()
        self._asks: dict[str, _Ask] = {}
        self._count = 0
        self._changed = anyio.Event()
        self._activity = anyio.Event()
        self._collected = False

    # -- HostLink ------------------------------------------------------------------------------

    @property
    def key(self) -> object:
        return self

    @property
    def asks_host(self) -> bool:
        return True

    async def request(self, request: types.InputRequest) -> HostAnswer:
        if (reason := refusal(self.capabilities, request)) is not None:
            return types.ErrorData(code=types.INVALID_REQUEST, message=reason)
        self._count += 1
        key = f"{request.method}-{self._count}"
        ask = _Ask(request)
        self._asks[key] = ask
        self._changed.set()
        try:
            await ask.answered.wait()
        finally:
            self._asks.pop(key, None)  # answered, or the upstream gave up (cancelled its request)
        assert ask.answer is not None
        return ask.answer

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        ctx = self.ctx
        if ctx is not None and log_allowed(params.level, self.log_level):
            notification = types.LoggingMessageNotification(params=params)
            await ctx.session.send_notification(notification, related_request_id=ctx.request_id)

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        if self.ctx is not None:
            await self.ctx.session.report_progress(progress, total, message)

    async def elicitation_complete(self, params: types.ElicitCompleteNotificationParams) -> None:
        return None  # the 2026-07-28 era has no elicitation/complete: the host's next round gets the result

    # -- rounds --------------------------------------------------------------------------------

    async def run(self, work: Work) -> None:
        try:
            with self.scope:
                self.result = await work(self)
        except MCPError as exc:  # a protocol error meant for the host (an unknown resource, ...)
            self.result = exc
        except Exception as exc:  # boundary: the host gets an error, the gateway keeps serving
            logger.exception("a modern-era call failed")
            self.result = MCPError(code=types.INTERNAL_ERROR, message=f"The call failed: {exc}")
        if self.result is None:
            self.result = MCPError(code=types.REQUEST_TIMEOUT, message="The call was cancelled.")
        self.done.set()
        self._changed.set()

    async def watch(self, forget: Callable[[], None]) -> None:
        """Forget the exchange once its result is collected; cancel it when no round comes for too long."""
        try:
            while not self._collected:
                activity = self._activity
                with anyio.move_on_after(_ABANDONED_AFTER) as idle:
                    await activity.wait()
                if idle.cancelled_caught and self.ctx is None:
                    logger.info("a host never came back for its input-required call; cancelling it")
                    self.scope.cancel()
                    return
        finally:
            forget()

    def _touch(self) -> None:
        self._activity.set()
        self._activity = anyio.Event()

    def answer(self, responses: Mapping[str, Any] | None) -> None:
        """Deliver the host's responses to the asks they answer; unanswered ones are asked again."""
        for key, raw in (responses or {}).items():
            ask = self._asks.get(key)
            if ask is None or ask.answered.is_set():
                continue
            ask.answer = _parse_answer(ask.request, raw)
            ask.answered.set()
        for ask in self._asks.values():
            if not ask.answered.is_set():
                ask.sent = False

    async def round(self, ctx: ServerRequestContext[Any]) -> Any:
        """Wait for the call's result or its next asks; a host that gives up cancels the call."""
        self.ctx = ctx
        self._touch()
        try:
            while True:
                if self.done.is_set():
                    self._collected = True
                    if isinstance(self.result, BaseException):
                        raise self.result
                    return self.result
                unsent = {key: ask for key, ask in self._asks.items() if not ask.sent and not ask.answered.is_set()}
                if unsent:
                    for ask in unsent.values():
                        ask.sent = True
                    requests = {key: ask.request for key, ask in unsent.items()}
                    return types.InputRequiredResult(input_requests=requests, request_state=self.token)
                self._changed = anyio.Event()
                await self._changed.wait()
        except anyio.get_cancelled_exc_class():
            self._collected = True  # the host gave up on the call: so does the gateway
            self.scope.cancel()
            raise
        finally:
            self.ctx = None
            self._touch()


def _parse_answer(request: types.InputRequest, raw: Any) -> HostAnswer:
    if isinstance(raw, BaseModel):
        raw = raw.model_dump(by_alias=True, mode="json", exclude_none=True)
    try:
        parsed: Any = response_type(request).model_validate(raw, by_name=False)
    except ValidationError:
        return types.ErrorData(code=types.INVALID_PARAMS, message=f"The host's answer to {request.method} is invalid.")
    return cast(HostAnswer, parsed)  # validated against `response_type(request)`, one of HostAnswer's members


class Exchanges:
    """The modern-era calls waiting on their host, by `requestState`."""

    def __init__(self) -> None:
        self._open: dict[str, Exchange] = {}

    def start(
        self,
        tasks: anyio.abc.TaskGroup,
        work: Work,
        capabilities: types.ClientCapabilities | None,
        log_level: str | None,
    ) -> Exchange:
        token = secrets.token_urlsafe(24)
        exchange = Exchange(token, capabilities, log_level)
        self._open[token] = exchange
        tasks.start_soon(exchange.run, work)

        def forget() -> None:
            self._open.pop(token, None)

        tasks.start_soon(exchange.watch, forget)
        return exchange

    def resume(self, token: str) -> Exchange:
        exchange = self._open.get(token)
        if exchange is None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message="Invalid or expired requestState: the call it belongs to has ended; call the tool again.",
            )
        return exchange
