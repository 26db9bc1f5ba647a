"""The gateway as a host launches it: a real `nexus-gateway serve` process over stdio."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import psutil
import pytest
from mcp import Client

from tests.conftest import faulty, gateway_params, library, text_of, write_config

pytestmark = pytest.mark.anyio


async def test_stdio_gateway_lists_and_calls_tools(tmp_path: Path):
    config = write_config(tmp_path, {"one": faulty()}, mode="routed")
    with anyio.fail_after(30):
        async with Client(gateway_params(config), mode="legacy", cache=None) as client:
            assert [tool.name for tool in (await client.list_tools()).tools][:3] == [
                "search_tools",
                "call_tool",
                "describe_tool",
            ]
            result = await client.call_tool("call_tool", {"name": "one__echo", "arguments": {"text": "over stdio"}})
            assert text_of(result) == "over stdio"


def test_stdout_carries_only_protocol_messages(tmp_path: Path):
    """Logs go to stderr: every stdout line of the gateway is a JSON-RPC message."""
    config = write_config(tmp_path, {"noisy": faulty("--garbage")}, mode="passthrough")
    request = (
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        '"capabilities":{},"clientInfo":{"name":"t","version":"0"}}}\n'
        '{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
        '{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n'
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "nexus_gateway", "serve", "--config", str(config), "--log-level", "debug"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin and proc.stdout
    proc.stdin.write(request)
    proc.stdin.flush()
    lines = [proc.stdout.readline(), proc.stdout.readline()]
    _, stderr = proc.communicate(input="", timeout=20)  # closes stdin: the host went away
    messages = [json.loads(line) for line in lines]
    assert [message["id"] for message in messages] == [1, 2]
    assert "noisy__echo" in {tool["name"] for tool in messages[1]["result"]["tools"]}
    assert "non-protocol line" in stderr and proc.returncode == 0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_shuts_down_and_reaps_every_upstream(tmp_path: Path, signum: int):
    config = write_config(tmp_path, {"a": faulty(), "b": faulty()}, mode="passthrough")
    proc = subprocess.Popen(
        [sys.executable, "-m", "nexus_gateway", "serve", "--config", str(config), "--transport", "http", "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    gateway = psutil.Process(proc.pid)
    deadline = time.monotonic() + 20
    while len(gateway.children(recursive=True)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    children = gateway.children(recursive=True)
    assert len(children) >= 2
    proc.send_signal(signum)
    proc.wait(timeout=15)
    _, still_running = psutil.wait_procs(children, timeout=5)
    assert still_running == []


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_requests_right_after_connecting_wait_for_a_slow_upstream(tmp_path: Path, era: str):
    config = write_config(tmp_path, {"library": library("--start-delay", "2")}, mode="passthrough", start_timeout=20)
    with anyio.fail_after(40):
        async with Client(gateway_params(config), mode=era, cache=None) as client:
            prompt = await client.get_prompt("library__review", {"topic": "start-up"})
            read = await client.read_resource("library://book/dune")
            templates = await client.list_resource_templates()
    assert prompt.messages[0].content.text == "Please review start-up."  # type: ignore[union-attr]
    assert read.contents[0].text == "The book dune."  # type: ignore[union-attr]
    assert [template.uri_template for template in templates.resource_templates] == ["library://book/{slug}"]
