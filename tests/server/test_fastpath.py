"""The fast path for the hot request (server/_fastpath.py, _direct.py): tools/call of an upstream tool over
stdio without the SDK's dispatch, answered as the slow path answers, in both protocol eras; and the requests
it must leave to the slow path. Real gateway processes, a real upstream (tests/servers/features_server.py)."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process
from mcp import Client
from mcp.client.stdio import stdio_client
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    LOG_LEVEL_META_KEY,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
)

from tests.conftest import ROOT, gateway_params, stdio_entry, text_of, write_config

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

FEATURES = str(ROOT / "tests" / "servers" / "features_server.py")
MODERN = "2026-07-28"
DIRECT_IDS = 9_000_000_000_000


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class RawHost:
    """A host speaking JSON lines to a gateway process, reading what it answers (and its log, at the end)."""

    def __init__(self, process: Process, log: Path) -> None:
        self.process = process
        self.log = log
        self.seen: list[dict[str, Any]] = []
        self._buffer = b""

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")

    async def line(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        while b"\n" not in self._buffer:
            self._buffer += await self.process.stdout.receive()
        raw, self._buffer = self._buffer.split(b"\n", 1)
        message: dict[str, Any] = json.loads(raw)
        self.seen.append(message)
        return message

    async def answer(self, request_id: Any) -> dict[str, Any]:
        while True:
            message = await self.line()
            if message.get("id") == request_id and "method" not in message:
                return message

    async def request(self, request_id: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
        await self.send({"id": request_id, "method": method, "params": params})
        return await self.answer(request_id)

    async def close(self) -> str:
        """End the session (stdin closed: the host went away) and return the gateway's log."""
        assert self.process.stdin is not None
        await self.process.stdin.aclose()
        await self.process.wait()
        return self.log.read_text()


async def raw_host(tmp_path: Path, name: str, entry: dict[str, Any] | None = None, **nexus: Any) -> RawHost:
    """A gateway process in front of the features server (`entry`: more keys of its config entry)."""
    folder = tmp_path / name
    folder.mkdir()
    config = write_config(folder, {"features": stdio_entry(FEATURES, **(entry or {}))}, mode="passthrough", **nexus)
    log = folder / "stderr.log"
    command = [sys.executable, "-m", "nexus_gateway", "serve", "--config", str(config), "--log-level", "info"]
    process = await anyio.open_process(command, stderr=log.open("wb"))
    return RawHost(process, log)


def envelope(capabilities: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        PROTOCOL_VERSION_META_KEY: MODERN,
        CLIENT_CAPABILITIES_META_KEY: capabilities or {},
        CLIENT_INFO_META_KEY: {"name": "raw", "version": "0"},
        **extra,
    }


async def open_session(host: RawHost, era: str, capabilities: dict[str, Any] | None = None) -> None:
    """The handshake (legacy) or a first modern request; then tools/list, so every upstream is up."""
    if era == "legacy":
        params = {"protocolVersion": "2025-06-18", "capabilities": capabilities or {}, "clientInfo": {"name": "raw"}}
        await host.request(0, "initialize", {**params, "clientInfo": {"name": "raw", "version": "0"}})
        await host.send({"method": "notifications/initialized"})
        listed = await host.request("list", "tools/list", {})
    else:
        listed = await host.request("list", "tools/list", {"_meta": envelope(capabilities)})
    assert "features__request_id" in {tool["name"] for tool in listed["result"]["tools"]}


def call(name: str, arguments: dict[str, Any], era: str, capabilities: dict[str, Any] | None = None, **meta: Any):
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if era == "modern":
        params["_meta"] = envelope(capabilities, **meta)
    elif meta:
        params["_meta"] = meta
    return params


def served(log: str) -> tuple[int, int]:
    found = re.search(r"fast path: (\d+) calls served, (\d+) upstream calls sent directly", log)
    assert found is not None, log
    return int(found.group(1)), int(found.group(2))


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_a_passthrough_call_takes_the_fast_path_and_answers_as_the_slow_path_does(tmp_path: Path, era: str):
    with anyio.fail_after(60):
        fast, slow = await raw_host(tmp_path, "fast"), await raw_host(tmp_path, "slow", fast_path=False)
        answers = []
        for host in (fast, slow):
            await open_session(host, era)
            if era == "legacy":
                await host.request("level", "logging/setLevel", {"level": "info"})
            for request_id, level in ((6, "debug"), (7, "warning")):
                params = call("features__log", {"level": level, "text": level}, era)
                answers.append(await host.request(request_id, "tools/call", params))
            answers.append(await host.request(8, "tools/call", call("features__request_id", {}, era)))
        fast_log, slow_log = await fast.close(), await slow.close()
    fast_answers, slow_answers = answers[:3], answers[3:]
    assert fast_answers[:2] == slow_answers[:2]  # resultType, the serverInfo stamp, content: all alike
    answer = fast_answers[1]["result"]
    assert answer["content"][0]["text"] == "logged"
    if era == "modern":
        assert answer["resultType"] == "complete" and SERVER_INFO_META_KEY in answer["_meta"]
    else:
        assert "resultType" not in answer
    assert int(fast_answers[2]["result"]["content"][0]["text"]) >= DIRECT_IDS  # the direct channel's id
    assert int(slow_answers[2]["result"]["content"][0]["text"]) < DIRECT_IDS
    assert served(fast_log) == (3, 3)
    assert "fast path" not in slow_log
    logs = [
        [m["params"]["data"] for m in host.seen if m.get("method") == "notifications/message"] for host in (fast, slow)
    ]
    assert logs[0] == logs[1] == (["warning"] if era == "legacy" else [])  # at or above the host's level


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_invalid_arguments_on_the_fast_path_get_the_slow_paths_error_result(tmp_path: Path, era: str):
    with anyio.fail_after(60):
        fast, slow = await raw_host(tmp_path, "fast"), await raw_host(tmp_path, "slow", fast_path=False)
        answers = []
        for host in (fast, slow):
            await open_session(host, era)
            answers.append(await host.request(3, "tools/call", call("features__log", {"level": 5}, era)))
        fast_log = await fast.close()
        await slow.close()
    assert answers[0] == answers[1]
    assert answers[0]["result"]["isError"] is True and "level" in answers[0]["result"]["content"][0]["text"]
    assert served(fast_log) == (1, 0)  # validated in the gateway: the upstream never saw it


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_progress_on_the_fast_path_reaches_the_host_with_its_own_token(tmp_path: Path, era: str):
    with anyio.fail_after(60):
        host = await raw_host(tmp_path, "fast")
        await open_session(host, era)
        params = call("features__progress", {"steps": 3, "delay": 0.0}, era, progressToken="mine")
        answer = await host.request(5, "tools/call", params)
        log = await host.close()
    progress = [m["params"] for m in host.seen if m.get("method") == "notifications/progress"]
    assert answer["result"]["content"][0]["text"] == "done"
    assert [(p["progressToken"], p["progress"], p["total"], p["message"]) for p in progress] == [
        ("mine", 1.0, 3.0, "step 1"),
        ("mine", 2.0, 3.0, "step 2"),
        ("mine", 3.0, 3.0, "step 3"),
    ]
    assert served(log) == (1, 1)


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_a_host_cancelling_a_fast_call_cancels_the_upstream_call_and_gets_no_answer(tmp_path: Path, era: str):
    with anyio.fail_after(60):
        host = await raw_host(tmp_path, "fast")
        await open_session(host, era)
        await host.send({"id": 9, "method": "tools/call", "params": call("features__slow", {"seconds": 30}, era)})
        await anyio.sleep(0.5)  # the call has reached the upstream (it sleeps 30 s)
        await host.send({"method": "notifications/cancelled", "params": {"requestId": 9, "reason": "no"}})
        counted = await host.request(10, "tools/call", call("features__cancelled", {}, era))
        log = await host.close()
    assert counted["result"]["content"][0]["text"] == "1"  # the upstream's call was cancelled
    assert not [m for m in host.seen if m.get("id") == 9]  # a cancelled request is never answered
    assert served(log) == (1, 2)


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_a_host_that_can_be_asked_for_input_takes_the_slow_path(tmp_path: Path, era: str):
    with anyio.fail_after(60):
        host = await raw_host(tmp_path, "fast")
        await open_session(host, era, {"sampling": {}})
        answer = await host.request(4, "tools/call", call("features__request_id", {}, era, {"sampling": {}}))
        log = await host.close()
    assert answer["result"]["content"][0]["text"]
    assert served(log) == (0, 1)  # the SDK's dispatch on the front; the upstream call still goes direct


async def test_a_modern_request_asking_for_logs_takes_the_slow_path(tmp_path: Path):
    with anyio.fail_after(60):
        host = await raw_host(tmp_path, "fast")
        await open_session(host, "modern")
        params = call("features__log", {"level": "warning", "text": "x"}, "modern", **{LOG_LEVEL_META_KEY: "info"})
        answer = await host.request(4, "tools/call", params)
        log = await host.close()
    assert answer["result"]["content"][0]["text"] == "logged"
    assert served(log) == (0, 1)  # the front's SDK dispatch served it (the upstream call still went direct)


async def test_an_unknown_tool_takes_the_slow_path_and_gets_its_error(tmp_path: Path):
    with anyio.fail_after(60):
        host = await raw_host(tmp_path, "fast")
        await open_session(host, "legacy")
        answer = await host.request(4, "tools/call", call("features__nope", {}, "legacy"))
        log = await host.close()
    assert answer["result"]["isError"] is True and "Unknown tool" in answer["result"]["content"][0]["text"]
    assert served(log) == (0, 0)


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_the_official_client_calls_through_the_fast_path_in_both_eras(tmp_path: Path, era: str):
    config = write_config(tmp_path, {"features": stdio_entry(FEATURES)}, mode="passthrough")
    log = tmp_path / "stderr.log"
    with anyio.fail_after(60), log.open("w") as errlog:
        params = gateway_params(config, "--log-level", "info")
        async with Client(stdio_client(params, errlog=errlog), mode=era, cache=None) as client:
            await client.list_tools()  # a call before the upstream is up waits for it on the slow path
            result = await client.call_tool("features__request_id", {})
            echoed = await client.call_tool("features__log", {"level": "info", "text": "hi"})
    assert int(text_of(result)) >= DIRECT_IDS
    assert text_of(echoed) == "logged"
    assert served(log.read_text()) == (2, 2)


async def test_fast_calls_past_their_deadline_get_the_slow_paths_timeout_errors_and_are_cancelled_upstream(
    tmp_path: Path,
):
    """Progress restarts a fast call's idle timeout, up to the hard maximum, as on the slow path."""
    limits = {"call_timeout": 1, "call_timeout_max": 3}
    answers: dict[str, list[dict[str, Any]]] = {}
    with anyio.fail_after(90):
        fast = await raw_host(tmp_path, "fast", limits)
        slow = await raw_host(tmp_path, "slow", limits, fast_path=False)
        for name, host in (("fast", fast), ("slow", slow)):
            await open_session(host, "legacy")
            answers[name] = [
                await host.request(1, "tools/call", call("features__progress", {"steps": 5, "delay": 0.4}, "legacy")),
                await host.request(2, "tools/call", call("features__slow", {"seconds": 2}, "legacy")),
                await host.request(3, "tools/call", call("features__progress", {"steps": 20, "delay": 0.4}, "legacy")),
                await host.request(4, "tools/call", call("features__cancelled", {}, "legacy")),
            ]
        fast_log = await fast.close()
        await slow.close()
    assert answers["fast"] == answers["slow"]
    alive, silent, endless, cancelled = (answer["result"] for answer in answers["fast"])
    assert text_of_wire(alive) == "done" and not alive.get("isError")
    assert silent["isError"] and "did not answer the call to 'slow' within 1s" in text_of_wire(silent)
    assert endless["isError"] and "past the 3s maximum" in text_of_wire(endless)
    assert text_of_wire(cancelled) == "1"  # the silent call was cancelled upstream when it timed out
    assert served(fast_log) == (4, 4)


async def test_an_upstream_dying_during_a_fast_call_answers_as_the_slow_path_does_and_is_restarted(tmp_path: Path):
    answers: dict[str, dict[str, Any]] = {}
    pids: dict[str, tuple[int, int]] = {}
    with anyio.fail_after(90):
        fast, slow = await raw_host(tmp_path, "fast"), await raw_host(tmp_path, "slow", fast_path=False)
        for name, host in (("fast", fast), ("slow", slow)):
            await open_session(host, "legacy")
            pid = int(
                text_of_wire((await host.request(1, "tools/call", call("features__pid", {}, "legacy")))["result"])
            )
            await host.send(
                {"id": 2, "method": "tools/call", "params": call("features__slow", {"seconds": 30}, "legacy")}
            )
            await anyio.sleep(0.5)  # the call has reached the upstream (it sleeps 30 s)
            os.kill(pid, signal.SIGKILL)
            answers[name] = (await host.answer(2))["result"]
            restarted = await host.request(3, "tools/call", call("features__pid", {}, "legacy"))
            while restarted["result"].get("isError"):  # restarting: the gateway says so until it is back
                await anyio.sleep(0.2)
                restarted = await host.request(3, "tools/call", call("features__pid", {}, "legacy"))
            pids[name] = (pid, int(text_of_wire(restarted["result"])))
        await fast.close()
        await slow.close()
    assert answers["fast"] == answers["slow"]
    assert answers["fast"]["isError"]
    assert "closed the connection during the call to 'slow'" in text_of_wire(answers["fast"])
    assert all(before != after for before, after in pids.values())


def text_of_wire(result: dict[str, Any]) -> str:
    text: str = result["content"][0]["text"]
    return text
