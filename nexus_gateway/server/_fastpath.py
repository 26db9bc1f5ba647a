"""The hot request on stdio, served without the SDK's server dispatch.

A passthrough `tools/call` of an upstream tool (or a routed `call_tool` naming one) is most of
what a gateway does. The SDK's server parses the line into models, spawns a task, builds a request
context, runs middleware and re-validates the result on the way out: about half of the gateway's
time per call. `StdioFastPath.take` sees each input line before the SDK does and serves the calls
that nothing unusual can happen during; everything else goes to the SDK untouched:

    line -> take: a tools/call the fast path may serve?  -> arguments valid, gateway ready: the upstream's
                   |                                         line written at once and the call followed
                   |                                         to its end with no task (`_followed.py`:
                   |                                         deadline, host routing, metrics, errors)
                   |                                      -> otherwise a task on the full path
                   |                                         (`MetaTools.call_tool`: it words the error,
                   |                                         waits for the gateway, ...)
                   |                                      -> response line (the upstream's, re-addressed)
                   `-> no: the SDK's server, as before (and `take` still notes initialize and
                       logging/setLevel, to know the host)

Only what decides where the call goes, and the argument check, stand between the host's line and the
upstream's. A host's `notifications/cancelled` reaches the upstream before whatever the host sent
after it; a host that goes away has its calls cancelled upstream.

A call takes the fast path only when the host cannot be asked for input (it declared neither
sampling, elicitation nor roots: an upstream that asks gets the same refusal the slow path gives),
its era is settled (the handshake done, or a valid 2026-07-28 envelope on a modern connection) with
no modern log level, and its tool is an upstream tool on a stdio upstream whose direct channel is
up. Progress (when the host sent a token) and log messages reach the host as notifications; a
`notifications/cancelled` for a fast call cancels it (and so its upstream call). Results get what
the SDK's serializer gives them on the same era: `resultType` and the `serverInfo` stamp on
2026-07-28, neither on the handshake era.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple, Protocol

import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.shared.inbound import InboundLadderRejection, classify_inbound_request
from pydantic import BaseModel

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.catalog.validation import schema_problems
from nexus_gateway.gateway import Gateway, ToolResult
from nexus_gateway.meta import definitions
from nexus_gateway.meta.tools import MetaTools
from nexus_gateway.runtime import _json
from nexus_gateway.server._followed import FollowedCall, Link
from nexus_gateway.server._forward import forwarded_meta
from nexus_gateway.server._links import OFF, log_allowed, refusal
from nexus_gateway.upstreams.callbacks import HostAnswer
from nexus_gateway.upstreams.pool import Upstream

logger = logging.getLogger(__name__)


class _Task(Protocol):
    def cancel(self) -> Any: ...


Spawn = Callable[..., _Task]
WriteLine = Callable[[bytes], Awaitable[bool]]
WriteNow = Callable[[bytes], bool]

_WATCHED = re.compile(rb'"(?:tools/call|notifications/cancelled|initialize|logging/setLevel)"')
"""A line naming none of these methods is left to the SDK unparsed."""
_ASKING = ("sampling", "elicitation", "roots")


_RESULT_OPEN = b',"result":{'


class _Target(NamedTuple):
    """An upstream tool a fast call reaches, and the arguments it gets."""

    record: ToolRecord
    upstream: Upstream
    arguments: dict[str, Any]


class _FastLink(Link):
    """The host side of a fast call (a `HostLink`): progress and logs as notification lines, and the
    answer line as soon as the upstream's is read (`answer`)."""

    def __init__(self, path: StdioFastPath, request_id: Any, progress_token: Any, log_level: str | None) -> None:
        self._path = path
        self._request_id = request_id
        self._token = progress_token
        self._log_level = log_level
        self.answered = False

    def answer(self, result: dict[str, Any], rest: bytes | None = None) -> bool:
        self.answered = self._path.answer_now(self._request_id, result, rest)
        return self.answered

    @property
    def key(self) -> object:
        return self._path  # one host on stdio

    @property
    def asks_host(self) -> bool:
        return False

    async def request(self, request: types.InputRequest) -> HostAnswer:
        reason = refusal(None, request) or f"The host cannot answer {request.method}."
        return types.ErrorData(code=types.INVALID_REQUEST, message=reason)

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        if log_allowed(params.level, self._log_level):
            dumped = params.model_dump(by_alias=True, mode="json", exclude_none=True)
            await self._path.notify("notifications/message", dumped)

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        if self._token is None:
            return
        params: dict[str, Any] = {"progressToken": self._token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self._path.notify("notifications/progress", params)

    async def elicitation_complete(self, params: types.ElicitCompleteNotificationParams) -> None:
        dumped = params.model_dump(by_alias=True, mode="json", exclude_none=True)
        await self._path.notify("notifications/elicitation/complete", dumped)


class StdioFastPath:
    """Serves eligible tools/call lines of one stdio host; `take` is called with every input line."""

    def __init__(self, gateway: Gateway, server: Server[Any]) -> None:
        self.gateway = gateway
        self.tools = MetaTools.of(gateway)
        self.server = server
        self.served = 0
        """Calls this fast path answered (tests and /metrics read it)."""
        self._spawn: Spawn | None = None
        self._write: WriteLine | None = None
        self._write_now: WriteNow | None = None
        self._era: str | None = None
        """None until the host's first request: "legacy" (it began with initialize) or "modern"."""
        self._asks_host = True
        self._log_level: str | None = None
        self._calls: dict[Any, _Task] = {}
        """The fast calls in flight by host request id: followed calls, or tasks (cancelling either cancels
        its upstream call)."""

    def attach(self, spawn: Spawn, write: WriteLine, write_now: WriteNow) -> None:
        """The transport is serving: `spawn(fn, *args)` runs a task (returning something to `cancel()`), `write(line)`
        writes one line, waiting while the host is slow to read, `write_now(line)` without waiting."""
        self._spawn, self._write, self._write_now = spawn, write, write_now

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        if self._write is not None:
            await self._write(_json.line({"jsonrpc": "2.0", "method": method, "params": params}))

    # -- lines ---------------------------------------------------------------------------------

    def take(self, line: bytes) -> bool:
        """Serve `line` here (True), or leave it to the SDK (False) after noting what it tells of the host."""
        if self._spawn is None or _WATCHED.search(line) is None:
            self._settle_era(line)
            return False
        try:
            message = _json.loads(line)
        except ValueError:
            return False
        if not isinstance(message, dict) or not isinstance(method := message.get("method"), str):
            return False
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if "id" not in message:
            return method == "notifications/cancelled" and self._cancel(params.get("requestId"))
        if not _is_id(message["id"]):
            return False  # the SDK words the error
        if self._era is None:
            self._era = "modern" if method != "initialize" and _has_envelope(params) else "legacy"
            if method == "initialize":
                self._asks_host = _asks(params.get("capabilities"))
            return False
        if method == "logging/setLevel" and self._era == "legacy":
            level = params.get("level")
            self._log_level = level if isinstance(level, str) else None
            return False
        if method != "tools/call" or message["id"] in self._calls:
            return False
        served = self._eligible(params)
        if served is None:
            return False
        log_level, progress_token, target = served
        assert self._spawn is not None
        request_id = message["id"]
        link = _FastLink(self, request_id, progress_token, log_level)
        meta = forwarded_meta(params.get("_meta"))
        if self.gateway.ready and not schema_problems(
            target.record.input_schema, target.arguments, key=target.record.content_hash
        ):
            finish = functools.partial(self.answer_now, request_id)
            followed = FollowedCall(self.gateway, target.record, target.upstream, link, finish)
            if followed.start(target.arguments, meta):
                self._calls[request_id] = followed
                return True
        # Anything unusual (not ready yet, arguments to word an error for, a full pipe): a task on the full path.
        self._calls[request_id] = self._spawn(self._serve, request_id, params, link, meta)
        return True

    def _settle_era(self, line: bytes) -> None:
        if self._era is None and b'"method"' in line and b'"id"' in line:
            try:
                message = _json.loads(line)
            except ValueError:
                return
            if isinstance(message, dict) and "id" in message and isinstance(message.get("method"), str):
                params = message.get("params")
                self._era = "modern" if isinstance(params, dict) and _has_envelope(params) else "legacy"

    def _eligible(self, params: dict[str, Any]) -> tuple[str | None, Any, _Target] | None:
        """(log level, host progress token, what is called) when the fast path may serve a tools/call with
        `params`."""
        meta = params.get("_meta")
        meta = meta if isinstance(meta, dict) else {}
        if self._era == "legacy":
            if self._asks_host or _has_envelope(params):
                return None
            log_level = self._log_level
        else:
            route = classify_inbound_request({"method": "tools/call", "params": params})
            if isinstance(route, InboundLadderRejection) or _asks(route.client_capabilities):
                return None
            if meta.get(types.LOG_LEVEL_META_KEY, OFF) != OFF:
                return None
            log_level = OFF
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str) or not isinstance(arguments, dict | None):
            return None
        target = self._direct_target(name, arguments or {})
        if target is None:
            return None
        token = meta.get("progressToken")
        if token is not None and (not isinstance(token, str | int) or isinstance(token, bool)):
            return None
        return log_level, token, target

    def _direct_target(self, name: str, arguments: dict[str, Any]) -> _Target | None:
        """The upstream tool a tools/call names (itself, or through `call_tool`) and its arguments, when
        it is on a stdio upstream whose direct channel is up."""
        gateway = self.gateway
        if gateway.mode == "passthrough":
            target: Any = name
        elif name == definitions.CALL_TOOL and isinstance(inner := arguments.get("arguments") or {}, dict):
            target, arguments = arguments.get("name"), inner
        else:
            return None
        record = gateway.catalog.get(target) if isinstance(target, str) else None
        if record is None:
            return None  # unknown or quarantined: the slow path words the error
        upstream = gateway.pool.get(record.server)
        if upstream is None or upstream.direct is None or not upstream.direct.ready:
            return None
        return _Target(record, upstream, arguments)

    def _cancel(self, request_id: Any) -> bool:
        call = self._calls.pop(request_id, None) if _is_id(request_id) else None
        if call is None:
            return False
        call.cancel()  # a cancelled request is never answered (a task ends before it writes)
        return True

    def close(self) -> None:
        """The host has gone: every followed call is cancelled upstream (tasks are cancelled by their owner)."""
        for call in list(self._calls.values()):
            if isinstance(call, FollowedCall):
                call.cancel()
        self._calls.clear()

    def answer_now(self, request_id: Any, result: ToolResult, rest: bytes | None = None) -> bool:
        """Write the answer to a fast call whose upstream has just answered (from the upstream's reader,
        before the call's bookkeeping unwinds); False when the host cancelled it or has gone. `rest` is the
        upstream's line after its id (`_direct._after_id`): when the result needs no change, the answer is
        that line re-addressed, not the result serialized again."""
        if self._write_now is None or self._calls.pop(request_id, None) is None:
            return False
        line = self._spliced(request_id, result, rest) if rest is not None and isinstance(result, dict) else None
        if line is None:
            line = _json.line({"jsonrpc": "2.0", "id": request_id, "result": self._wire_result(result)})
        written = self._write_now(line)
        self.served += written
        return written

    def _spliced(self, request_id: Any, result: dict[str, Any], rest: bytes) -> bytes | None:
        """The answer line as `rest` re-addressed to `request_id`, with what `_wire_result` would add on the
        2026-07-28 era spliced in; None when the result needs more than that."""
        if "resultType" in result:
            return None
        head = b'{"jsonrpc":"2.0","id":' + _json.dumps(request_id)
        if self._era == "legacy":
            return head + rest + b"\n"
        if "_meta" in result or not result or not rest.startswith(_RESULT_OPEN):
            return None
        return (
            head
            + _RESULT_OPEN
            + b'"resultType":"complete","_meta":'
            + self._stamp_json
            + b","
            + rest[len(_RESULT_OPEN) :]
            + b"\n"
        )

    @functools.cached_property
    def _stamp(self) -> dict[str, Any]:
        """The `serverInfo` stamp of 2026-07-28 results (the server's identity does not change while it runs)."""
        return self.server.server_info_stamp

    @functools.cached_property
    def _stamp_json(self) -> bytes:
        return _json.dumps({types.SERVER_INFO_META_KEY: self._stamp})

    # -- serving -------------------------------------------------------------------------------

    async def _serve(
        self, request_id: Any, params: dict[str, Any], link: _FastLink, meta: dict[str, Any] | None
    ) -> None:
        try:
            await self.gateway.wait_ready()
            result = await self.tools.call_tool(params["name"], params.get("arguments"), link=link, meta=meta)
        except Exception as exc:  # boundary: the host gets an error answer, the gateway keeps serving
            if link.answered:
                return  # the host has its answer: what the unwinding met after it changes nothing
            logger.exception("a fast-path call failed")
            error = {"code": types.INTERNAL_ERROR, "message": f"The call failed: {exc}"}
            if self._write is not None:
                await self._write(_json.line({"jsonrpc": "2.0", "id": request_id, "error": error}))
            return
        finally:
            asked = self._calls.pop(request_id, None) is not None  # False once answered early or cancelled
        if self._write is None:
            return
        if not asked:
            await self._write(b"")  # answered early (without waiting): wait here while the host is slow to read
            return
        self.served += 1
        await self._write(_json.line({"jsonrpc": "2.0", "id": request_id, "result": self._wire_result(result)}))

    def _wire_result(self, result: Any) -> dict[str, Any]:
        if isinstance(result, BaseModel):
            wire: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        elif self._era == "legacy" and "resultType" not in result:
            passed: dict[str, Any] = result  # the upstream's result as it came: nothing to add or take away
            return passed
        else:
            wire = dict(result)
        if self._era == "legacy":
            wire.pop("resultType", None)
            return wire
        wire.setdefault("resultType", "complete")
        stamp = self._stamp
        meta = wire.get("_meta")
        if not isinstance(meta, dict):
            wire["_meta"] = {types.SERVER_INFO_META_KEY: stamp}
        elif meta.get(types.SERVER_INFO_META_KEY) is None:
            wire["_meta"] = {**meta, types.SERVER_INFO_META_KEY: stamp}
        return wire


def _is_id(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def _has_envelope(params: dict[str, Any]) -> bool:
    meta = params.get("_meta")
    return isinstance(meta, dict) and types.PROTOCOL_VERSION_META_KEY in meta


def _asks(capabilities: Any) -> bool:
    """Whether a host with these capabilities (a dict or the SDK's model) may be asked for input."""
    if isinstance(capabilities, BaseModel):
        return any(getattr(capabilities, key, None) is not None for key in _ASKING)
    return not isinstance(capabilities, dict) or any(capabilities.get(key) is not None for key in _ASKING)
