"""A tools/call written to a stdio upstream at once and followed to its end with callbacks, no task.

The stdio fast path (`server/_fastpath.py`) writes the upstream's line the moment it reads the host's
(`DirectCalls.send`). A task per call waiting for the answer, with its cancel scope and context managers,
was about a fifth of the gateway's Python function calls per proxied call, and on a busy machine that CPU
competes with the upstream for a core. A `FollowedCall` keeps what that task kept, from the event loop:

    host line -> FollowedCall.start: the router knows the call's host (logs, requests for input),
                 a timer keeps its deadline (`TimerDeadline`: progress restarts it, up to the hard
                 maximum), the line goes out
    upstream's answer -> the host link's `answer` (the result, at once) -> `_ended`: metrics, activity,
                 and for anything but a result the same error result the slow path gives
                 (`Upstream.failed`: a closed connection marks the upstream down)
    deadline  -> `notifications/cancelled` upstream, the slow path's timeout error (`Upstream.timed_out`)
    cancel()  -> (the host cancelled, or went away) forgotten: no answer
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.gateway import Gateway
from nexus_gateway.meta.tools import error_result
from nexus_gateway.runtime._deadline import TimerDeadline
from nexus_gateway.upstreams._direct import result_of
from nexus_gateway.upstreams.callbacks import AnsweringLink, HostLink, InFlight
from nexus_gateway.upstreams.pool import Upstream

Finish = Callable[[types.CallToolResult], object]
"""Answers the host with an error result (the call's own result reaches it through the link's `answer`)."""


class Link(AnsweringLink, HostLink):
    """The host side of a followed call: a host link that also takes the result early."""


class FollowedCall:
    """One call to an upstream tool, from `start` (its line written) to its answer, error, deadline or
    cancellation; `cancel()` is what the fast path calls when the host cancels it or goes away."""

    def __init__(self, gateway: Gateway, record: ToolRecord, upstream: Upstream, link: Link, finish: Finish) -> None:
        self._gateway = gateway
        self._record = record
        self._upstream = upstream
        self._link = link
        self._finish = finish
        self._what = f"the call to {record.upstream_name!r}"
        self._started = 0.0
        self._sent: int | None = None
        self._deadline: TimerDeadline | None = None
        self._in_flight: InFlight | None = None
        self._client: Client | None = None

    def start(self, arguments: dict[str, Any], meta: dict[str, Any] | None) -> bool:
        """Write the call to the upstream now; False (nothing sent) when it cannot go out at once."""
        upstream, channel, client = self._upstream, self._upstream.direct, self._upstream.client
        if channel is None or client is None or not upstream.connected:
            return False
        self._started = time.perf_counter()
        tool = self._record.upstream_name
        sent = channel.send(tool, arguments, meta, self._progressed, self._link.answer, self._ended)
        if sent is None:
            return False
        # The upstream works meanwhile: nothing it writes is read before this returns.
        self._deadline = TimerDeadline(upstream.call_timeout, upstream.call_timeout_max, self._expired)
        self._in_flight = upstream.router.enter(self._link, self._deadline)
        self._sent, self._client = sent, client
        return True

    async def _progressed(self, progress: float, total: float | None, message: str | None) -> None:
        if self._in_flight is not None:
            await self._in_flight.progressed(progress, total, message)

    def cancel(self) -> None:
        """The host cancelled the call or went away: the upstream is told at once, nothing answers the host."""
        self._cancel_upstream()
        self._end(None, asyncio.CancelledError("The host cancelled the call."))

    def _expired(self, hard: bool) -> None:
        assert self._deadline is not None
        error = self._upstream.timed_out(self._what, self._deadline, hard=hard)
        self._cancel_upstream()
        self._end(None, error)
        self._finish(error_result(str(error)))

    def _cancel_upstream(self) -> None:
        channel = self._upstream.direct
        if self._sent is not None and channel is not None:
            channel.cancel_now(self._sent)
            channel.forget(self._sent)

    def _ended(self, message: dict[str, Any]) -> None:
        """The upstream answered (or its connection closed first)."""
        try:
            result = result_of(message)
        except MCPError as exc:
            failure = self._upstream.failed(self._what, exc, self._client)
            self._end(None, failure)
            self._finish(error_result(str(failure)))
            return
        self._end(result, None)  # the link's `answer` has written it already

    def _end(self, result: dict[str, Any] | None, error: BaseException | None) -> None:
        if self._in_flight is None:
            return  # ended already
        assert self._deadline is not None
        self._deadline.cancel()
        self._upstream.router.leave(self._in_flight)
        self._in_flight = None
        self._gateway.record_call(self._record, self._started, result, error)
