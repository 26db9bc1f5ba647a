"""The stdio transport answers every line a host sends, even lines that are not valid JSON-RPC."""

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from nexus_gateway.server._rejects import rejection
from tests.conftest import ROOT, write_config

LIBRARY = ROOT / "tests" / "servers" / "library_server.py"

pytestmark = pytest.mark.anyio

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
BAD_LINES = [
    "this is not JSON",  # parse error, id null
    '{"jsonrpc": "2.0", "id": "bad-params", "method": "tools/list", "params": "not an object"}',
    '{"jsonrpc": "1.0", "id": 3, "method": "tools/list"}',
    '{"id": 4, "method": "tools/list"}',
    '{"jsonrpc": "2.0", "method": 5}',  # invalid, and no id to read: id null
    '{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"arguments": {}}}',  # valid shape, bad params
]
EXPECTED = {None: [-32700, -32600], "bad-params": [-32600], 3: [-32600], 4: [-32600], 6: [-32602]}


async def replies_until(stdout: Any, request_id: int) -> list[dict[str, Any]]:
    """The gateway's output lines, parsed, up to and including the answer to `request_id`."""
    replies: list[dict[str, Any]] = []
    buffered = b""
    async for chunk in stdout:
        buffered += chunk
        *complete, buffered = buffered.split(b"\n")
        replies.extend(json.loads(line) for line in complete if line)
        if any(reply.get("id") == request_id for reply in replies):
            break
    return replies


async def test_invalid_lines_get_one_error_each_and_the_gateway_keeps_serving(tmp_path: Path):
    config = write_config(tmp_path, {}, mode="routed")
    lines = [json.dumps(INITIALIZE), '{"jsonrpc": "2.0", "method": "notifications/initialized"}', *BAD_LINES]
    lines.append('{"jsonrpc": "2.0", "id": 7, "method": "tools/list"}')
    with anyio.fail_after(40):
        async with await anyio.open_process(
            [sys.executable, "-m", "nexus_gateway", "serve", "--config", str(config)], stderr=None
        ) as proc:
            assert proc.stdin and proc.stdout
            await proc.stdin.send(("\n".join(lines) + "\n").encode())
            replies = await replies_until(proc.stdout, 7)
            await proc.stdin.aclose()
            assert await proc.wait() == 0
    errors: dict[Any, list[int]] = {}
    for reply in replies:
        if "error" in reply:
            errors.setdefault(reply["id"], []).append(reply["error"]["code"])
    assert {key: sorted(codes) for key, codes in errors.items()} == EXPECTED
    assert [reply["id"] for reply in replies if "result" in reply] == [1, 7]
    assert next(reply for reply in replies if reply["id"] == 7)["result"]["tools"]


def test_a_malformed_response_from_the_host_is_never_answered():
    assert rejection('{"jsonrpc": "2.0", "id": 9, "result": "not an object"}') is None
    assert rejection('{"jsonrpc": "2.0", "id": true, "method": "ping", "params": 1}').id is None  # type: ignore[union-attr]


async def test_a_host_that_hangs_up_mid_request_lets_the_gateway_exit_quietly(tmp_path: Path):
    """The Inspector gives up after 15 s and closes both pipes while a request still waits for upstreams:
    the gateway's late answer must not crash it (asyncio raises RuntimeError writing to a closed pipe)."""
    slow = {"command": sys.executable, "args": [str(LIBRARY), "--start-delay", "2"]}
    config = write_config(tmp_path, {"slow": slow}, mode="passthrough")
    lines = [json.dumps(INITIALIZE), '{"jsonrpc": "2.0", "method": "notifications/initialized"}']
    lines.append('{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}')  # waits for the slow upstream
    with anyio.fail_after(60):
        async with await anyio.open_process(
            [sys.executable, "-m", "nexus_gateway", "serve", "--config", str(config)]
        ) as proc:
            assert proc.stdin and proc.stdout and proc.stderr
            await proc.stdin.send(("\n".join(lines) + "\n").encode())
            first = await proc.stdout.receive()
            assert b'"id":1' in first.replace(b" ", b"")  # initialized, tools/list now pending
            await proc.stdout.aclose()
            await proc.stdin.aclose()
            code = await proc.wait()
            stderr = b"".join([chunk async for chunk in proc.stderr]).decode(errors="replace")
    assert code == 0, stderr
    assert "Traceback" not in stderr and "ExceptionGroup" not in stderr, stderr


async def test_a_line_over_the_limit_is_dropped_and_the_next_request_is_answered(tmp_path: Path):
    """A host line over `LINE_LIMIT` (64 MiB) is dropped with an error in the log; the session goes on."""
    config = write_config(tmp_path, {}, mode="routed")
    huge = b'{"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"pad": "' + b"x" * (65 << 20) + b'"}}'
    head = [json.dumps(INITIALIZE).encode(), b'{"jsonrpc": "2.0", "method": "notifications/initialized"}']
    after = b'{"jsonrpc": "2.0", "id": 7, "method": "tools/list"}\n'
    with anyio.fail_after(60):
        async with await anyio.open_process(
            [sys.executable, "-m", "nexus_gateway", "serve", "--config", str(config)]
        ) as proc:
            assert proc.stdin and proc.stdout and proc.stderr
            async with anyio.create_task_group() as tg:

                async def send() -> None:
                    assert proc.stdin
                    await proc.stdin.send(b"\n".join([*head, huge]) + b"\n" + after)

                tg.start_soon(send)  # the gateway reads while this writes: 65 MiB do not fit a pipe
                replies = await replies_until(proc.stdout, 7)
            await proc.stdin.aclose()
            assert await proc.wait() == 0
            stderr = b"".join([chunk async for chunk in proc.stderr]).decode(errors="replace")
    assert [reply.get("id") for reply in replies] == [1, 7]  # nothing answers the dropped line
    assert "tools" in replies[1]["result"]
    assert "dropped an input line longer than" in stderr, stderr
