"""The direct tools/call channel (_direct.py) on its own: what it hands the caller, and when."""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from nexus_gateway._direct import DirectCalls

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def call_answered_with(answer: dict[str, Any]) -> tuple[list[str], dict[str, Any] | MCPError]:
    """A direct call whose upstream answers `answer` (with the request's id); what happened, in order."""
    direct = DirectCalls("echo")
    sent: list[dict[str, Any]] = []
    written = anyio.Event()
    events: list[str] = []

    async def write(line: bytes) -> None:
        sent.append(json.loads(line))
        written.set()

    def on_result(result: dict[str, Any]) -> bool:
        events.append(f"on_result {json.dumps(result, sort_keys=True)}")
        return True

    async def upstream() -> None:
        await written.wait()
        assert await direct.claim(json.dumps({"jsonrpc": "2.0", "id": sent[0]["id"], **answer}).encode())
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
    return events, outcome


async def test_a_direct_call_hands_its_result_over_the_moment_the_upstream_answer_is_read():
    result = {"content": [{"type": "text", "text": "ping"}], "isError": False}
    events, outcome = await call_answered_with({"result": result})
    assert events == [f"on_result {json.dumps(result, sort_keys=True)}", "claimed", "returned"]
    assert outcome == result


async def test_an_error_answer_is_never_handed_over_early():
    events, outcome = await call_answered_with({"error": {"code": -32602, "message": "no such tool"}})
    assert events == ["claimed", "returned"]
    assert isinstance(outcome, MCPError)
    assert outcome.error.message == "no such tool"
