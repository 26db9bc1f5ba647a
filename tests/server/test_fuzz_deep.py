"""Deep nesting on every front: one line nested 10,000 deep (and less) is answered, and the gateway serves on.

Each front gets requests whose params, arguments or ids nest past what the gateway reads
(`_json.MAX_DEPTH`: what the SDK's own parser takes), and one within it; then a normal call. The deep request
is answered with a parse error carrying its id (read from the line's top level without parsing it), the
one within the limit with the tool's own answer, and the normal call still succeeds: stdio with its fast path
(the line served from the pipe's callback, and read by the reading task), stdio on the SDK's path,
streamable HTTP in both eras, SSE, and the daemon's Unix socket. An upstream's deep answer becomes an error
result for that call, not a wait for its timeout.
"""

from __future__ import annotations

import json
import queue
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.streams.buffered
import httpx
import pytest

from nexus_gateway.bench.load import ECHO
from nexus_gateway.runtime import preamble
from nexus_gateway.runtime._json import MAX_DEPTH
from tests.conftest import start_gateway_http, stdio_entry, write_config
from tests.daemon._helpers import daemon_config, host
from tests.server.test_fuzz import StdioGateway

WAIT = 30.0
"""Seconds for one answer (the machine may be busy)."""
INITIALIZE = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "deep", "version": "0"}}
DEPTHS = [MAX_DEPTH + 1, 1_000, 1_030, 10_000]
"""Past the limit: just past it, below and past orjson's own limit (1024), and the campaign's line."""


def nested(depth: int, leaf: str = "1") -> str:
    """A JSON value `depth` lists deep (written out: no Python object that deep is ever built)."""
    return "[" * depth + leaf + "]" * depth


def call(request_id: Any, depth: int) -> str:
    """A `call_tool` of the echo tool whose `text` argument nests `depth` deep, its id written last (as the
    TypeScript SDK writes requests) when `request_id` is a string."""
    params = '{"name":"call_tool","arguments":{"name":"echo__echo","arguments":{"text":' + nested(depth) + "}}}"
    if isinstance(request_id, str):
        return '{"method":"tools/call","params":' + params + ',"jsonrpc":"2.0","id":' + json.dumps(request_id) + "}"
    return '{"jsonrpc":"2.0","id":' + str(request_id) + ',"method":"tools/call","params":' + params + "}"


def deep_lines() -> list[tuple[Any, str]]:
    """(id, line) of every deep request a front gets: deep arguments at each depth, deep params, a deep id."""
    lines: list[tuple[Any, str]] = [(f"deep-{depth}", call(f"deep-{depth}", depth)) for depth in DEPTHS]
    lines.append((901, '{"jsonrpc":"2.0","id":901,"method":"ping","params":{"x":' + nested(10_000) + "}}"))
    lines.append((None, '{"jsonrpc":"2.0","id":' + nested(10_000) + ',"method":"ping"}'))
    return lines


def normal(request_id: int) -> str:
    arguments = {"name": "echo__echo", "arguments": {"text": "still serving"}}
    params = {"name": "call_tool", "arguments": arguments}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


def assert_refused(reply: dict[str, Any], request_id: Any) -> None:
    """A parse error with the request's id; without one (its id is what nests), any parse error."""
    assert reply.get("id") == request_id and reply["error"]["code"] == -32700, reply
    assert request_id is None or f"more than {MAX_DEPTH} levels" in reply["error"]["message"], reply


def assert_served(reply: dict[str, Any], request_id: int) -> None:
    assert reply.get("id") == request_id and "error" not in reply, reply
    assert reply["result"]["content"][0]["text"] == "still serving", reply


def _config(tmp: Path, **nexus: Any) -> Path:
    servers = {"echo": {"command": sys.executable, "args": [str(ECHO)]}}
    return write_config(tmp, servers, mode="routed", run=False, embedder="hashing", call_timeout=10, **nexus)


# ---- stdio ------------------------------------------------------------------------------------------------


class Stdio(StdioGateway):
    """`nexus-gateway serve` on pipes (test_fuzz's reader), initialized, written to in any pieces."""

    def __init__(self, config: Path) -> None:
        super().__init__(config)
        self.write(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE}) + "\n")
        self.reply(0)
        self.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def write(self, data: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data.encode())
        self.proc.stdin.flush()

    def reply(self, request_id: Any) -> dict[str, Any]:
        """The next reply (no notification) to `request_id`; fails when none comes within WAIT seconds."""
        while True:
            try:
                message = json.loads(self.lines.get(timeout=WAIT))
            except queue.Empty:
                raise AssertionError(f"no reply to {request_id!r}; the gateway exited: {self.proc.poll()}") from None
            if "method" not in message:
                assert message.get("id") == request_id, f"expected a reply to {request_id!r}, got {message!r:.300}"
                return message

    def close(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=WAIT)


@pytest.fixture(params=["fast path", "sdk path"])
def stdio(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stdio]:
    gateway = Stdio(_config(tmp_path, fast_path=request.param == "fast path"))
    yield gateway
    gateway.close()


@pytest.mark.parametrize("arrival", ["alone", "split"])
def test_a_deep_line_on_stdio_is_answered_and_the_gateway_serves_on(stdio: Stdio, arrival: str):
    """`alone`: the line arrives whole while the reader waits (the fast path takes it from the pipe's
    callback); `split`: it arrives in two writes, so the reading task hands it over (the path that ended the
    gateway)."""
    for number, (request_id, line) in enumerate(deep_lines()):
        if arrival == "split":
            stdio.write(line[: len(line) // 2])
            stdio.write(line[len(line) // 2 :] + "\n")
        else:
            stdio.write(line + "\n")
        assert_refused(stdio.reply(request_id), request_id)
        stdio.write(normal(number + 1) + "\n")
        assert_served(stdio.reply(number + 1), number + 1)
    assert stdio.proc.poll() is None


def test_arguments_within_the_limit_reach_validation_on_stdio(stdio: Stdio):
    stdio.write(call(7, MAX_DEPTH - 10) + "\n")
    reply = stdio.reply(7)
    assert reply["result"]["isError"] is True and "is not of type 'string'" in reply["result"]["content"][0]["text"]
    stdio.write(normal(8) + "\n")
    assert_served(stdio.reply(8), 8)


# ---- streamable HTTP and SSE ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    proc, url = start_gateway_http(_config(tmp_path_factory.mktemp("deep-http")))
    yield url
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=WAIT)


def _post(http: httpx.Client, url: str, body: str, headers: dict[str, str]) -> dict[str, Any]:
    response = http.post(f"{url}/mcp", content=body.encode(), headers={"content-type": "application/json", **headers})
    assert response.status_code < 500, response.text[:300]
    kind = response.headers.get("content-type", "")
    if kind.startswith("text/event-stream"):
        events = [line[5:] for line in response.text.splitlines() if line.startswith("data:") and line[5:].strip()]
        return json.loads(events[-1])
    return response.json()


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_a_deep_body_on_streamable_http_is_answered_and_the_gateway_serves_on(http_url: str, era: str):
    accept = {"Accept": "application/json, text/event-stream"}
    with httpx.Client(timeout=WAIT, headers=accept) as http:
        if era == "legacy":
            opened = http.post(
                f"{http_url}/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE}
            )
            headers = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
            http.post(
                f"{http_url}/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
            )
        else:
            headers = {"mcp-protocol-version": "2026-07-28"}
        for number, (request_id, line) in enumerate(deep_lines()):
            if era == "modern" and request_id is not None:
                envelope = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},'
                line = line.replace('"params":{', '"params":{' + envelope, 1)
            assert_refused(_post(http, http_url, line, headers), request_id)
            if era == "legacy":
                assert_served(_post(http, http_url, normal(number + 1), headers), number + 1)
        assert http.get(f"{http_url}/healthz").status_code == 200


@pytest.mark.anyio
async def test_a_deep_message_over_sse_is_answered_and_the_gateway_serves_on(http_url: str):
    async with httpx.AsyncClient(base_url=http_url, timeout=WAIT) as http, anyio.create_task_group() as tg:
        events: anyio.abc.ObjectReceiveStream[tuple[str, str]]
        send, events = anyio.create_memory_object_stream[tuple[str, str]](100)

        async def listen() -> None:
            async with http.stream("GET", "/sse") as stream:
                kind = ""
                async for line in stream.aiter_lines():
                    if line.startswith("event:"):
                        kind = line[6:].strip()
                    elif line.startswith("data:"):
                        await send.send((kind, line[5:].strip()))

        tg.start_soon(listen)
        with anyio.fail_after(WAIT):
            kind, endpoint = await events.receive()
            assert kind == "endpoint"

            async def exchange(body: str, request_id: Any) -> dict[str, Any]:
                posted = await http.post(endpoint, content=body.encode(), headers={"content-type": "application/json"})
                if posted.status_code == 400:  # refused at once: the answer is the body (JSON-RPC with an id)
                    assert posted.headers["content-type"] == "application/json", posted.text
                    return posted.json()
                assert posted.status_code == 202, posted.text
                while True:
                    kind, data = await events.receive()
                    message = json.loads(data)
                    if kind == "message" and "method" not in message:
                        assert message.get("id") == request_id, message
                        return message

            opened = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE})
            assert "result" in await exchange(opened, 0)
            await http.post(endpoint, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
            for number, (request_id, line) in enumerate(deep_lines()):
                if request_id is None:  # no id to answer with: the SDK's plain 400
                    posted = await http.post(
                        endpoint, content=line.encode(), headers={"content-type": "application/json"}
                    )
                    assert posted.status_code == 400
                else:
                    assert_refused(await exchange(line, request_id), request_id)
                assert_served(await exchange(normal(number + 1), number + 1), number + 1)
        tg.cancel_scope.cancel()


# ---- the daemon's Unix socket -----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_deep_line_on_the_daemons_socket_is_answered_and_the_daemon_serves_on():
    servers = {"echo": stdio_entry(str(ECHO))}
    with daemon_config(servers, mode="routed", run=False, embedder="hashing") as (config, files):
        with anyio.fail_after(120):
            async with host(config, "legacy") as client:  # starts the daemon, as a host's first shim does
                await client.list_tools()
            async with await anyio.connect_unix(files.socket) as stream:
                buffered = anyio.streams.buffered.BufferedByteReceiveStream(stream)

                async def reply(request_id: Any) -> dict[str, Any]:
                    while True:
                        message = json.loads(await buffered.receive_until(b"\n", 1 << 20))
                        if "method" not in message:
                            assert message.get("id") == request_id, message
                            return message

                await stream.send(preamble.line(preamble.CONNECT))
                kind, _ = preamble.parse(await buffered.receive_until(b"\n", 1 << 16) + b"\n")
                assert kind == preamble.CONNECTED
                await stream.send(
                    json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE}).encode()
                    + b"\n"
                )
                await reply(0)
                await stream.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
                for number, (request_id, line) in enumerate(deep_lines()):
                    await stream.send(line.encode() + b"\n")
                    assert_refused(await reply(request_id), request_id)
                    await stream.send(normal(number + 1).encode() + b"\n")
                    assert_served(await reply(number + 1), number + 1)


# ---- an upstream's deep answer ----------------------------------------------------------------------------

_NESTING_SERVER = r"""
import json, sys
for raw in sys.stdin:
    message = json.loads(raw)
    if "id" not in message:
        continue
    method, request_id = message["method"], message["id"]
    if method == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "nesting", "version": "0"}}
    elif method == "tools/list":
        schema = {"type": "object", "properties": {"depth": {"type": "integer"}}, "required": ["depth"]}
        result = {"tools": [{"name": "nest", "description": "Answer nested depth deep.", "inputSchema": schema}]}
    elif method == "tools/call":
        depth = message["params"]["arguments"]["depth"]
        text = {"type": "text", "text": f"nested {depth}"}
        head = {"jsonrpc": "2.0", "id": request_id, "result": {"content": [text]}}
        sys.stdout.write(json.dumps(head)[:-2] + ',"structuredContent":{"v":' + "[" * depth + "]" * depth + "}}}\n")
        sys.stdout.flush()
        continue
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()
"""


@pytest.mark.parametrize("fast_path", [True, False])
def test_an_upstreams_deep_answer_is_an_error_result_and_the_upstream_serves_on(tmp_path: Path, fast_path: bool):
    script = tmp_path / "nesting_server.py"
    script.write_text(_NESTING_SERVER)
    servers = {"nesting": {"command": sys.executable, "args": [str(script)]}}
    gateway = Stdio(write_config(tmp_path, servers, mode="passthrough", call_timeout=60, fast_path=fast_path))
    try:
        for number, depth in enumerate([10_000, MAX_DEPTH + 5, 3]):
            params = {"name": "nesting__nest", "arguments": {"depth": depth}}
            gateway.write(
                json.dumps({"jsonrpc": "2.0", "id": number + 1, "method": "tools/call", "params": params}) + "\n"
            )
            result = gateway.reply(number + 1)["result"]
            if depth > MAX_DEPTH:
                assert (
                    result["isError"] is True and f"more than {MAX_DEPTH} levels deep" in result["content"][0]["text"]
                )
            else:
                assert result["content"][0]["text"] == "nested 3" and not result.get("isError")
        assert gateway.proc.poll() is None
    finally:
        gateway.close()
