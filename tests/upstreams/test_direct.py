"""The direct tools/call channel (_direct.py) on its own: what it hands the caller, and when."""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

from nexus_gateway.upstreams._direct import DirectCalls

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def call_answered_with(
    answer: dict[str, Any], *, dumps: Any = json.dumps
) -> tuple[list[str], dict[str, Any] | MCPError, list[bytes | None]]:
    """A direct call whose upstream answers `answer` (with the request's id, its line written by `dumps`);
    what happened, in order, and the bytes after the id `on_result` was handed."""
    direct = DirectCalls("echo")
    sent: list[dict[str, Any]] = []
    written = anyio.Event()
    events: list[str] = []
    rests: list[bytes | None] = []

    async def write(line: bytes) -> None:
        sent.append(json.loads(line))
        written.set()

    def on_result(result: dict[str, Any], rest: bytes | None) -> bool:
        events.append(f"on_result {json.dumps(result, sort_keys=True)}")
        rests.append(rest)
        return True

    async def upstream() -> None:
        await written.wait()
        assert await direct.claim(dumps({"jsonrpc": "2.0", "id": sent[0]["id"], **answer}).encode())
        events.append("claimed")

    direct.attach(write, OrderedDict())
    outcome: dict[str, Any] | MCPError
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(upstream)
            try:
                outcome = await direct.call("echo", {"text": "ping"}, None, None, on_result)
            except MCPError as exc:
                outcome = exc
            events.append("returned")
    return events, outcome, rests


async def test_a_direct_call_hands_its_result_over_the_moment_the_upstream_answer_is_read():
    result = {"content": [{"type": "text", "text": "ping"}], "isError": False}
    events, outcome, _ = await call_answered_with({"result": result})
    assert events == [f"on_result {json.dumps(result, sort_keys=True)}", "claimed", "returned"]
    assert outcome == result


def compact(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"))


async def test_an_answer_written_as_the_python_sdk_writes_it_comes_with_its_bytes_after_the_id():
    result = {"content": [{"type": "text", "text": 'p\u00efng \\ "'}], "isError": False}
    _, _, [rest] = await call_answered_with({"result": result}, dumps=compact)
    assert rest is not None and rest.startswith(b',"result":{')
    spliced = b'{"jsonrpc":"2.0","id":"host-1"' + rest
    assert json.loads(spliced) == {"jsonrpc": "2.0", "id": "host-1", "result": result}


@pytest.mark.parametrize(
    "dumps",
    [
        json.dumps,  # spaces after the separators
        lambda message: compact({"result": message["result"], "jsonrpc": "2.0", "id": message["id"]}),  # TypeScript
        lambda message: compact({"jsonrpc": "2.0", "id": str(message["id"]), "result": message["result"]}),
    ],
)
async def test_an_answer_written_any_other_way_comes_without_bytes_to_splice(dumps: Any):
    result = {"content": [{"type": "text", "text": "ping"}], "isError": False}
    _, outcome, rests = await call_answered_with({"result": result}, dumps=dumps)
    assert rests == [None]
    assert outcome == result


class Upstream:
    """The pipes of a direct channel: what it wrote (parsed), written at once or waited for."""

    def __init__(self, direct: DirectCalls) -> None:
        self.lines: list[dict[str, Any]] = []
        self.waited: list[dict[str, Any]] = []
        direct.attach(self.write, OrderedDict(), self.write_now)

    async def write(self, line: bytes) -> None:
        self.waited.append(json.loads(line))
        self.lines.append(json.loads(line))

    def write_now(self, line: bytes) -> bool:
        self.lines.append(json.loads(line))
        return True


async def test_a_sent_call_is_on_the_wire_at_once_and_its_progress_result_and_end_reach_its_callbacks():
    direct = DirectCalls("echo")
    upstream = Upstream(direct)
    early: list[Any] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        early.append(("progress", progress, total, message))

    def on_result(result: dict[str, Any], rest: bytes | None) -> bool:
        early.append(("result", result))
        return True

    request_id = direct.send("echo", {"text": "ping"}, {"trace": "t"}, on_progress, on_result, early.append)
    assert request_id is not None
    assert upstream.lines == [
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {
                "name": "echo",
                "arguments": {"text": "ping"},
                "_meta": {"trace": "t", "progressToken": request_id},
            },
        }
    ]
    assert direct.in_flight
    progress = {"method": "notifications/progress", "params": {"progressToken": request_id, "progress": 1, "total": 2}}
    assert await direct.claim(compact({"jsonrpc": "2.0", **progress}).encode())
    result = {"content": [], "isError": False}
    answer = {"jsonrpc": "2.0", "id": request_id, "result": result}
    assert await direct.claim(compact(answer).encode())
    assert early == [("progress", 1.0, 2.0, None), ("result", result), answer]
    assert upstream.waited == []  # nothing written through the waiting writer
    assert not direct.in_flight
    assert not await direct.claim(compact(answer).encode())  # ended: a second answer is not its


async def test_an_answer_line_is_claimed_without_waiting_and_anything_else_is_left_to_claim():
    direct = DirectCalls("echo")
    Upstream(direct)
    early: list[Any] = []
    request_id = direct.send("echo", {}, None, None, lambda result, rest: early.append(rest) or True, early.append)
    assert request_id is not None
    progress = {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": request_id, "progress": 1},
    }
    assert not direct.claim_answer(compact(progress).encode() + b"\n")  # a notification: `claim`'s to take
    assert not direct.claim_answer(b'{"jsonrpc":"2.0","id":1,"result":{}}\n')  # the SDK's own request
    assert not direct.claim_answer(b'{"jsonrpc":"2.0","id":%d,"result":{' % request_id)  # not JSON
    assert early == [] and direct.in_flight
    answer = {"jsonrpc": "2.0", "id": request_id, "result": {"content": []}}
    assert direct.claim_answer(compact(answer).encode() + b"\n")
    assert early == [b',"result":{"content":[]}}', answer] and not direct.in_flight


async def test_a_sent_call_answered_with_an_error_ends_with_it_and_hands_no_result_over():
    direct = DirectCalls("echo")
    Upstream(direct)
    results: list[Any] = []
    ended: list[dict[str, Any]] = []
    request_id = direct.send("echo", {}, None, None, lambda result, rest: results.append(result) or True, ended.append)
    error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": "no such tool"}}
    assert await direct.claim(compact(error).encode())
    assert results == [] and ended == [error] and not direct.in_flight


async def test_a_sent_call_ends_with_connection_closed_when_the_transport_goes():
    direct = DirectCalls("echo")
    Upstream(direct)
    ended: list[dict[str, Any]] = []
    assert direct.send("echo", {}, None, None, None, ended.append) is not None
    direct.detach()
    assert [message["error"]["code"] for message in ended] == [CONNECTION_CLOSED]
    assert not direct.in_flight


async def test_a_forgotten_sent_call_hears_nothing_more():
    direct = DirectCalls("echo")
    Upstream(direct)
    ended: list[dict[str, Any]] = []
    request_id = direct.send("echo", {}, None, None, None, ended.append)
    assert request_id is not None
    direct.forget(request_id)
    assert not direct.in_flight
    assert not await direct.claim(compact({"jsonrpc": "2.0", "id": request_id, "result": {"content": []}}).encode())
    direct.detach()
    assert ended == []


async def test_nothing_is_sent_at_once_on_a_transport_that_cannot_write_without_waiting():
    direct = DirectCalls("echo")
    lines: list[bytes] = []

    async def write(line: bytes) -> None:
        lines.append(line)

    direct.attach(write, OrderedDict())
    assert direct.send("echo", {}, None, None, None, print) is None
    direct.attach(write, OrderedDict(), lambda line: False)  # its buffer is full
    assert direct.send("echo", {}, None, None, None, print) is None
    assert lines == [] and not direct.in_flight


async def test_an_error_answer_is_never_handed_over_early():
    events, outcome, _ = await call_answered_with({"error": {"code": -32602, "message": "no such tool"}})
    assert events == ["claimed", "returned"]
    assert isinstance(outcome, MCPError)
    assert outcome.error.message == "no such tool"


async def test_a_sent_call_cancelled_at_once_is_cancelled_upstream_ahead_of_the_next_call_and_only_once():
    direct = DirectCalls("echo")
    upstream = Upstream(direct)
    first = direct.send("echo", {}, None, None, None, print)
    assert first is not None
    direct.cancel_now(first)
    direct.cancel_now(first)
    second = direct.send("echo", {}, None, None, None, print)
    methods = [(line.get("method"), line.get("id") or line["params"].get("requestId")) for line in upstream.lines]
    assert methods == [("tools/call", first), ("notifications/cancelled", first), ("tools/call", second)]
