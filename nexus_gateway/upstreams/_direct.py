"""tools/call on a stdio upstream without the SDK's client dispatch (the gateway's hot request).

The SDK's client builds a request model, opens an OpenTelemetry span, hands the message through two
memory streams and a serializer, and parses the answer into models again: about half of what the
gateway spends on a proxied call. `DirectCalls` writes the request line to the upstream's stdin
itself and takes the answer off stdout before the SDK sees it (`claim`), as JSON:

    Upstream.call_tool -> DirectCalls.call -> one line on stdin       (id from a range of its own)
    (or: the stdio fast path -> FollowedCall -> DirectCalls.send -> the line at once, callbacks after)
    stdout line -> stdio_upstream.deliver -> DirectCalls.claim -> the waiting call (or its callbacks)
                                           `-> anything else: the SDK's client, as before

What the slow path guarantees stays: the call runs inside `Upstream._request` and the `CallRouter`
(timeouts, health, the host link; `_followed.py` keeps the same for a sent call), the request
carries a progress token so progress restarts the timeout and reaches the host, log messages taken
in order while a direct call is in flight reach its host before its answer does, a cancelled call
sends `notifications/cancelled`, an answer over `max_result_bytes` becomes an `isError` result
(`stdio_upstream` knows the id), and what the upstream asks meanwhile goes through the SDK's client
to the router, which knows the call's host.
Ids are integers from `_FIRST_ID` on, so they never meet the SDK's own (counted from 0) and upstreams
that only expect numbers are served alike.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.shared.exceptions import MCPError

from nexus_gateway.runtime import _json

logger = logging.getLogger(__name__)

_FIRST_ID = 9_000_000_000_000
_ID_SPAN = 1_000_000
_ID_MARK = str(_FIRST_ID)[:7].encode()
"""Every direct id starts with these digits: a line without them answers no direct call."""
_LOG_MARK = b'"notifications/message"'
_THREAD_PARSE_BYTES = 1 << 20
_CANCEL_WRITE_TIMEOUT = 2.0

Progressed = Callable[[float, float | None, str | None], Awaitable[None]]
Logged = Callable[[types.LoggingMessageNotificationParams], Awaitable[None]]
Write = Callable[[bytes], Awaitable[None]]
WriteNow = Callable[[bytes], bool]
Answered = Callable[[dict[str, Any], bytes | None], bool]
"""Handed a call's result as soon as it is read, and the bytes of the answer's line after its id (see
`_after_id`) when the line can be re-addressed by splicing; True when the result reached the host then."""
Ended = Callable[[dict[str, Any]], None]
"""Handed a sent call's whole answer message (a result or an error; CONNECTION_CLOSED when the transport
ends first), once, after `Answered`."""


@dataclass
class _Waiting:
    on_progress: Progressed | None
    on_result: Answered | None = None
    done: anyio.Event | None = None
    """What `call` waits on (a sent call has no waiter)."""
    answer: dict[str, Any] | None = None
    on_end: Ended | None = None
    """Set for a call `send` wrote: no task waits on it, this is called when it ends."""
    cancelled: bool = False
    """The upstream has been told the call is cancelled (`cancel_now`)."""


class DirectCalls:
    """The direct tools/call channel of one stdio upstream, live while its transport is (`attach`)."""

    def __init__(self, server: str, on_log: Logged | None = None) -> None:
        self.server = server
        self._on_log = on_log
        """Where log messages go while direct calls are in flight (taken here, in order: a message the
        upstream logs before it answers reaches the call's host before the call ends)."""
        self.calls = 0
        """Calls served on this channel (what tests and /metrics read to see the fast path taken)."""
        self._write: Write | None = None
        self._write_now: WriteNow | None = None
        self._pending_methods: OrderedDict[Any, str] | None = None
        self._waiting: dict[int, _Waiting] = {}
        self._count = 0

    @property
    def ready(self) -> bool:
        return self._write is not None

    @property
    def in_flight(self) -> bool:
        """Whether a direct call is waiting for its answer."""
        return bool(self._waiting)

    def attach(self, write: Write, pending_methods: OrderedDict[Any, str], write_now: WriteNow | None = None) -> None:
        """The transport is up: `write` sends one line to the upstream's stdin (`write_now`, when the
        transport has one, without waiting: False when it cannot); `pending_methods` is the transport's
        table of requests in flight (it answers an oversized result by it)."""
        self._write, self._write_now = write, write_now
        self._pending_methods = pending_methods

    def detach(self) -> None:
        """The transport is gone: every waiting call ends as the SDK's do, with CONNECTION_CLOSED."""
        self._write = self._write_now = None
        self._pending_methods = None
        closed = {"error": {"code": types.CONNECTION_CLOSED, "message": "Connection closed"}}
        waiting_calls, self._waiting = list(self._waiting.values()), {}
        for waiting in waiting_calls:
            if waiting.answer is None:
                waiting.answer = closed
            if waiting.done is not None:
                waiting.done.set()
            if waiting.on_end is not None:
                waiting.on_end(closed)

    # -- calls ---------------------------------------------------------------------------------

    def _next_id(self) -> int:
        self._count = (self._count + 1) % _ID_SPAN
        request_id = _FIRST_ID + self._count
        while request_id in self._waiting:
            self._count = (self._count + 1) % _ID_SPAN
            request_id = _FIRST_ID + self._count
        return request_id

    def _request_line(self, tool: str, arguments: dict[str, Any], meta: dict[str, Any] | None) -> tuple[int, bytes]:
        request_id = self._next_id()
        params: dict[str, Any] = {"name": tool, "arguments": arguments}
        params["_meta"] = {**(meta or {}), "progressToken": request_id}
        return request_id, _json.line({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})

    def send(
        self,
        tool: str,
        arguments: dict[str, Any],
        meta: dict[str, Any] | None,
        on_progress: Progressed | None,
        on_result: Answered | None,
        on_end: Ended,
    ) -> int | None:
        """Write a tools/call line now, without waiting, and return its id (None: the line cannot go out at
        once, so nothing was sent). No task waits on it: progress goes to `on_progress`, the result to
        `on_result` as soon as it is read, then the whole answer to `on_end`, which ends it (`forget` ends it
        sooner: a timeout, a host's cancellation). The stdio fast path sends a call this way the moment it
        reads the host's line (`_followed.py`)."""
        write_now, pending_methods = self._write_now, self._pending_methods
        if write_now is None or pending_methods is None:
            return None
        request_id, line = self._request_line(tool, arguments, meta)
        self._waiting[request_id] = _Waiting(on_progress, on_result, on_end=on_end)
        pending_methods[request_id] = "tools/call"
        if not write_now(line):
            self.forget(request_id)
            return None
        self.calls += 1
        return request_id

    def forget(self, request_id: int) -> None:
        """Stop following a call `send` wrote (nothing more reaches its callbacks)."""
        self._waiting.pop(request_id, None)
        if self._pending_methods is not None:
            self._pending_methods.pop(request_id, None)

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        meta: dict[str, Any] | None,
        on_progress: Progressed | None,
        on_result: Answered | None = None,
    ) -> dict[str, Any]:
        """The upstream's `CallToolResult` as a wire dict; raises `MCPError` for an error answer (and
        CONNECTION_CLOSED when the transport ends first). Cancelling it cancels the upstream's call.
        `on_result` is handed the result as soon as the answer is read (before this call returns)."""
        pending_methods = self._pending_methods
        if self._write is None or pending_methods is None:
            raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed")
        request_id, line = self._request_line(tool, arguments, meta)
        done = anyio.Event()
        waiting = self._waiting[request_id] = _Waiting(on_progress, on_result, done)
        pending_methods[request_id] = "tools/call"
        self.calls += 1
        try:
            await self._write(line)
            await done.wait()
        except anyio.get_cancelled_exc_class():
            await self._cancel(request_id)  # a write cut short may still have reached the upstream
            raise
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed") from None
        finally:
            self.forget(request_id)
        return result_of(waiting.answer)

    def cancel_now(self, request_id: int) -> None:
        """Tell the upstream at once (without waiting) that a call `send` wrote is cancelled, so that the
        notice goes out ahead of whatever is sent after it, as the host sent them; only once."""
        waiting = self._waiting.get(request_id)
        if waiting is None or waiting.answer is not None or waiting.cancelled or self._write_now is None:
            return
        waiting.cancelled = self._write_now(_cancel_line(request_id))

    async def _cancel(self, request_id: int) -> None:
        write, waiting = self._write, self._waiting.get(request_id)
        if write is None or (waiting is not None and waiting.cancelled):
            return
        shielded, bounded = anyio.CancelScope(shield=True), anyio.move_on_after(_CANCEL_WRITE_TIMEOUT)
        with shielded, bounded, suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await write(_cancel_line(request_id))

    # -- what the upstream writes --------------------------------------------------------------

    async def claim(self, line: bytes | bytearray) -> bool:
        """Take `line` when it answers (or reports progress on) a direct call; False leaves it to the SDK."""
        if not self._waiting or (_ID_MARK not in line and _LOG_MARK not in line):
            return False
        try:
            if len(line) >= _THREAD_PARSE_BYTES:
                message = await anyio.to_thread.run_sync(_json.loads, line)
            else:
                message = _json.loads(line)
        except ValueError:
            return False
        if not isinstance(message, dict):
            return False
        return await self.claim_message(message, line)

    def claim_answer(self, line: bytes) -> bool:
        """As `claim`, without waiting, for a line that may be a direct call's answer (what the transport's
        reader hands over the moment it arrives, `stdio_upstream`); False leaves the line to `claim`."""
        if not self._waiting or _ID_MARK not in line or len(line) >= _THREAD_PARSE_BYTES:
            return False
        try:
            message = _json.loads(line)
        except ValueError:
            return False
        return isinstance(message, dict) and "method" not in message and self._answered(message, line)

    def _answered(self, message: dict[str, Any], line: bytes | bytearray | None) -> bool:
        waiting = self._waiting.get(_as_id(message.get("id")))
        if waiting is None:
            return False
        waiting.answer = message
        if waiting.done is not None:
            waiting.done.set()
        result = message.get("result")
        if waiting.on_result is not None and isinstance(result, dict) and "error" not in message:
            waiting.on_result(result, None if line is None else _after_id(line, message.get("id")))
        if waiting.on_end is not None:
            self.forget(_as_id(message.get("id")))
            waiting.on_end(message)
        return True

    async def claim_message(self, message: dict[str, Any], line: bytes | bytearray | None = None) -> bool:
        """As `claim`, for a message already parsed from `line` (or made: the transport's answer to an
        oversized line)."""
        method = message.get("method")
        if method is None:
            return self._answered(message, line)
        if method == "notifications/message" and self._on_log is not None:
            try:
                logged = types.LoggingMessageNotificationParams.model_validate(message.get("params"), by_name=False)
            except ValueError:
                return False  # the SDK's client words what is wrong with it
            await self._on_log(logged)
            return True
        if method == "notifications/progress":
            params = message.get("params")
            token = params.get("progressToken") if isinstance(params, dict) else None
            waiting = self._waiting.get(_as_id(token))
            if waiting is None or not isinstance(params, dict):
                return False
            progress: Any = params.get("progress")
            total: Any = params.get("total")
            text: Any = params.get("message")
            if waiting.on_progress is not None and _is_number(progress):
                await waiting.on_progress(
                    float(progress),
                    float(total) if _is_number(total) else None,
                    text if isinstance(text, str) else None,
                )
            return True
        return False


def _cancel_line(request_id: int) -> bytes:
    params = {"requestId": request_id, "reason": "The gateway's caller cancelled the call."}
    return _json.line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})


def _after_id(line: bytes | bytearray, request_id: Any) -> bytes | None:
    """What follows the id in an answer line written `{"jsonrpc":"2.0","id":ID,...` (as the Python, Go and
    Rust SDKs write them), so that `{"jsonrpc":"2.0","id":OTHER` + it is the same answer to another id;
    None for a line written any other way."""
    if not isinstance(request_id, int):
        return None
    head = b'{"jsonrpc":"2.0","id":%d,' % request_id
    if not line.startswith(head):
        return None
    return bytes(line[len(head) - 1 :].rstrip())


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _as_id(value: Any) -> int:
    """A response id as the direct table keys it (an upstream may echo it as a string)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return -1


def result_of(answer: dict[str, Any] | None) -> dict[str, Any]:
    """The `CallToolResult` (wire form) of a tools/call answer message; `MCPError` for an error answer."""
    if answer is None:  # pragma: no cover - `done` is set only with an answer
        raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed")
    error = answer.get("error")
    if isinstance(error, dict):
        code = error.get("code")
        raise MCPError(
            code=code if isinstance(code, int) else types.INTERNAL_ERROR,
            message=str(error.get("message", "")),
            data=error.get("data"),
        )
    result = answer.get("result")
    if not isinstance(result, dict):
        raise MCPError(code=types.INTERNAL_ERROR, message="The upstream answered tools/call without a result object.")
    return result
