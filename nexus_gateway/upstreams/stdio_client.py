"""The gateway's stdio client transport: an upstream MCP server as a child process.

It replaces the SDK's `stdio_client` for upstreams (POSIX; Windows keeps the SDK's) for two reasons:

- **Large results.** stdout is framed by `LineFramer`, in time linear in the line (the SDK re-joins
  its buffer on every chunk: 31 s for a 42 MB result, the event loop stalled all the while). A line
  over `max_bytes` is skipped without being kept; when it was the response to a request, that
  request gets an answer naming the size and the `max_result_bytes` setting (a `tools/call` gets an
  `isError` result, other requests a JSON-RPC error), and the upstream keeps serving. A big line is
  parsed on a worker thread, so the loop never waits for it.
- **Process lifetime.** The upstream leads its own process group and the whole group is ended on
  shutdown (`_process_group`); on Linux it also dies with the gateway.

Lines that are not JSON-RPC are passed up as exceptions, as the SDK does (`WatchedTransport` counts them).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, TextIO, cast

import anyio
import anyio.lowlevel
import anyio.to_thread
import mcp_types as types
from anyio.abc import Process
from mcp.shared.message import SessionMessage

from nexus_gateway.runtime import _json
from nexus_gateway.runtime._exit import exited
from nexus_gateway.runtime._lines import EarlyLines, LineFramer, Oversized, response_id
from nexus_gateway.upstreams._direct import DirectCalls
from nexus_gateway.upstreams._prelaunch import adopt
from nexus_gateway.upstreams._process_group import end_group, spawn

logger = logging.getLogger(__name__)

_CHUNK = 1 << 20
_THREAD_PARSE_BYTES = 1 << 20
"""Lines at least this long are parsed on a worker thread."""
_EXIT_POLL = 0.25
_PENDING_CAP = 4096
_SETTLE_TURNS = 64
"""At most this many event-loop turns to let the SDK act on a line before a direct answer may overtake it."""
_ID_EDGE = 4096
"""Bytes at each end of a line that cannot be parsed where its id is looked for."""
_WRITER_FLUSH = 0.5
_WRITE_HIGH_WATER = 1 << 16
"""Bytes buffered for the upstream's stdin past which a direct write waits for the pipe to drain."""


@dataclass(frozen=True, kw_only=True)
class StdioCommand:
    command: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None


def _parse(line: bytearray) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        return exc


def _too_large_answer(server: str, line: Oversized, cap: int, pending: OrderedDict[Any, str]) -> SessionMessage | None:
    request_id = line.response_id()
    if request_id is None or request_id not in pending:
        logger.warning(
            "upstream %s wrote a %d-byte line, over max_result_bytes (%d), that answers no pending request; "
            "it was discarded",
            server,
            line.size,
            cap,
        )
        return None
    message = (
        f"The upstream server {server!r} answered with {line.size:,} bytes, over the gateway's limit of {cap:,} "
        f"bytes (setting `max_result_bytes`); the answer was discarded. Ask for less (a page, a filter, a smaller "
        f"range), or raise `max_result_bytes` for {server!r} in the gateway config."
    )
    logger.warning(
        "upstream %s: %s answer of %d bytes is over max_result_bytes (%d)", server, pending[request_id], line.size, cap
    )
    return _failed_answer(request_id, message, pending)


def _too_deep_answer(server: str, line: bytearray, pending: OrderedDict[Any, str]) -> SessionMessage | None:
    """The answer to the pending request `line` answers with JSON nested deeper than the gateway reads (the
    SDK's parser refuses it too: without this the request would wait for its timeout); None when `line` is
    anything else."""
    try:
        _json.loads(line)
    except _json.TooDeep:
        pass
    except ValueError:
        return None  # not JSON at all: passed up as the SDK does
    else:
        return None
    request_id = response_id(line[:_ID_EDGE], line[-_ID_EDGE:])
    if request_id is None or request_id not in pending:
        logger.warning("upstream %s wrote a line nested more than %d deep; it was discarded", server, _json.MAX_DEPTH)
        return None
    logger.warning("upstream %s: %s answer nests more than %d deep", server, pending[request_id], _json.MAX_DEPTH)
    message = (
        f"The upstream server {server!r} answered with JSON nested more than {_json.MAX_DEPTH} levels deep, "
        "more than the gateway reads; the answer was discarded."
    )
    return _failed_answer(request_id, message, pending)


def _failed_answer(request_id: Any, message: str, pending: OrderedDict[Any, str]) -> SessionMessage:
    """What answers the pending request `request_id` whose answer could not be taken: an `isError` result for a
    tools/call (the model reads why), a JSON-RPC error for anything else."""
    method = pending.pop(request_id)
    if method == "tools/call":
        result = {"content": [{"type": "text", "text": message}], "isError": True}
        return SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result))
    error = types.ErrorData(code=types.INTERNAL_ERROR, message=message)
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


async def _let_the_sdk_act(stream: Any) -> None:
    """Keep the upstream's order across the two channels. A direct call's answer read after a line handed to
    the SDK is claimed at once, while the SDK acts on that line only when its loop next runs: an upstream
    that cancels its own sampling request and then answers the call would have its answer written first,
    and the host's request would end with the call, never cancelled. So wait (at most `_SETTLE_TURNS`
    turns) until the SDK's loop is back for the next line (it applies `notifications/cancelled` inline),
    then a few turns more for what that set off (the cancellation sent on to the host)."""
    turns = 0
    while stream.statistics().tasks_waiting_receive == 0 and turns < _SETTLE_TURNS:
        await anyio.lowlevel.checkpoint()
        turns += 1
    for _ in range(min(turns, 8) + 2):
        await anyio.lowlevel.checkpoint()


@asynccontextmanager
async def stdio_upstream(
    spec: StdioCommand, *, server: str, max_bytes: int, errlog: TextIO, direct: DirectCalls | None = None
) -> AsyncIterator[tuple[Any, Any]]:
    """Spawn the upstream and yield (read stream, write stream) of `SessionMessage`s for `mcp.Client`;
    `direct`, when given, is attached to the process's pipes while they are open (`_direct.py`)."""
    process = await adopt(spec.command, spec.args, spec.env, spec.cwd) or await spawn(
        spec.command, spec.args, spec.env, spec.cwd, errlog
    )
    # No await between the spawn and the task group's shielded finally, or a cancellation would leak it.
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    pending: OrderedDict[Any, str] = OrderedDict()
    writer_done = anyio.Event()

    async def deliver(item: bytearray | Oversized) -> None:
        if isinstance(item, Oversized):
            answer = _too_large_answer(server, item, max_bytes, pending)
            if answer is not None and not (direct is not None and await direct.claim_message(_wire(answer))):
                await read_writer.send(answer)
            return
        if direct is not None and await direct.claim(item):
            return
        if len(item) >= _THREAD_PARSE_BYTES:
            parsed = await anyio.to_thread.run_sync(_parse, item)
        else:
            parsed = _parse(item)
        if isinstance(parsed, Exception) and (answer := _too_deep_answer(server, item, pending)) is not None:
            if not (direct is not None and await direct.claim_message(_wire(answer))):
                await read_writer.send(answer)
            return
        if isinstance(parsed, SessionMessage) and isinstance(
            parsed.message, types.JSONRPCResponse | types.JSONRPCError
        ):
            pending.pop(parsed.message.id, None)
        await read_writer.send(parsed)
        if direct is not None and direct.in_flight:
            await _let_the_sdk_act(read_writer)

    early = _early_answers(process, direct, max_bytes) if direct is not None else None

    async def read_stdout(stdout: Any) -> None:
        framer = LineFramer(max_bytes)
        async with read_writer:
            try:
                while True:
                    if early is not None:
                        early.waiting(framer)
                    chunk = await stdout.receive(_CHUNK)
                    if early is not None:
                        early.woke()
                    for item in framer.feed(chunk):
                        await deliver(item)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                pass
            finally:
                if early is not None:
                    early.woke()
                if direct is not None:
                    direct.detach()
        await _drain(stdout)  # the session is gone: keep the pipe empty so the upstream can exit

    async def write_stdin(stdin: Any) -> None:
        try:
            async with write_reader:
                async for session_message in write_reader:
                    message = session_message.message
                    if isinstance(message, types.JSONRPCRequest):
                        pending[message.id] = message.method
                        while len(pending) > _PENDING_CAP:
                            pending.popitem(last=False)
                    data = message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
                    await stdin.send(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()  # the upstream stopped reading: end the session, not hang it
        finally:
            writer_done.set()

    async def watch_exit(reading: anyio.CancelScope) -> None:
        # stdout ends when the upstream exits, unless something it started holds the pipe open
        # (asyncio's process.wait() also waits for that pipe): `exited` watches the process itself.
        await exited(process, _EXIT_POLL)
        await anyio.sleep(_EXIT_POLL)  # let the reader take what the upstream wrote last
        reading.cancel()

    stdin = process.stdin
    assert stdin is not None

    write_line, write_now = _line_writer(process, stdin)
    if direct is not None:
        direct.attach(write_line, pending, write_now)
    async with anyio.create_task_group() as tg:
        reading = anyio.CancelScope()
        tg.start_soon(_scoped, reading, read_stdout, process.stdout)
        tg.start_soon(write_stdin, process.stdin)
        tg.start_soon(watch_exit, reading)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                if direct is not None:
                    direct.detach()
                read_stream.close()
                write_stream.close()
                with anyio.move_on_after(_WRITER_FLUSH):
                    await writer_done.wait()
                await end_group(process)
                await _close(process)
            tg.cancel_scope.cancel()


def _early_answers(process: Process, direct: DirectCalls, max_bytes: int) -> EarlyLines | None:
    """A direct call's answer taken from the pipe's callback, the moment the upstream writes it
    (`EarlyLines`); None when the process's stdout is not an asyncio stream reader."""
    reader = getattr(getattr(process, "_process", None), "stdout", None) or getattr(process, "stream_reader", None)
    if not isinstance(reader, asyncio.StreamReader):
        return None

    def offer(line: bytes) -> bool | None:
        if len(line) > max_bytes:
            return None
        try:
            return direct.claim_answer(line) or None  # a line it leaves is claimed or passed on as usual
        except Exception:  # a callback's failure must not end the pipe's reading
            logger.exception("upstream: answering a direct call failed")
            return True

    return EarlyLines(reader, offer)


def _line_writer(
    process: Process, stdin: Any
) -> tuple[Callable[[bytes], Awaitable[None]], Callable[[bytes], bool] | None]:
    """(write, write_now) for one whole line to the upstream's stdin (lines written by several tasks never
    interleave): `write` waits while the pipe's buffer is over its high-water mark, `write_now` never waits
    and says whether the line went out (False when the pipe is closed or its buffer is over the mark).

    On asyncio the line goes straight to the process's `StreamWriter`: anyio's `send` also yields to the
    event loop after every write, a loop iteration per direct call for nothing (the line is already in the
    kernel's pipe or the buffer). Elsewhere there is no `write_now`."""
    raw = getattr(getattr(process, "_process", None), "stdin", None) or getattr(process, "stream_writer", None)
    if not isinstance(raw, asyncio.StreamWriter):
        return cast("Callable[[bytes], Awaitable[None]]", stdin.send), None

    async def write_line(data: bytes) -> None:
        if raw.is_closing():
            raise anyio.BrokenResourceError
        try:
            raw.write(data)
            if raw.transport.get_write_buffer_size() > _WRITE_HIGH_WATER:
                await raw.drain()
        except (ConnectionError, RuntimeError) as exc:  # uvloop raises RuntimeError for a closed transport
            raise anyio.BrokenResourceError from exc

    def write_now(data: bytes) -> bool:
        if raw.is_closing() or raw.transport.get_write_buffer_size() > _WRITE_HIGH_WATER:
            return False
        try:
            raw.write(data)
        except (ConnectionError, RuntimeError):
            return False
        return True

    return write_line, write_now


def _wire(answer: SessionMessage) -> dict[str, Any]:
    dumped: dict[str, Any] = answer.message.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


async def _scoped(scope: anyio.CancelScope, func: Any, *args: Any) -> None:
    with scope:
        await func(*args)


async def _drain(stdout: Any) -> None:
    with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        while True:
            await stdout.receive(_CHUNK)


async def _close(process: Process) -> None:
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await stream.aclose()
    # asyncio keeps the subprocess transport open (and warns at exit) while a pipe end survives.
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):
        with suppress(PermissionError):
            close()
