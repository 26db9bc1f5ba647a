"""`serve` starts its first upstreams before it imports the gateway, and the pool takes those processes."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import anyio
import psutil
import pytest
from mcp import Client
from mcp.client.stdio import stdio_client

from nexus_gateway.config import load_config
from nexus_gateway.upstreams import _prelaunch
from nexus_gateway.upstreams._prelaunch import Launch, adopt, discard, first_launches, prelaunch
from tests.conftest import faulty, gateway_params, text_of, write_config

pytestmark = pytest.mark.anyio

ADOPTED = re.compile(r"took the process started early for .* \(pid (\d+)\)")


def started_by(server_pid: int) -> set[int]:
    """The pids that may be the process started for this server: on Linux `_launch.py`, whose child the
    server is; elsewhere the server itself."""
    return {server_pid, psutil.Process(server_pid).ppid()}


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_the_upstreams_started_before_the_imports_are_the_ones_that_serve(tmp_path: Path, era: str):
    servers = {"one": faulty(), "two": faulty(), "three": faulty()}
    config = write_config(tmp_path, servers, mode="passthrough", max_concurrent_starts=2)
    log = tmp_path / "stderr.log"
    with anyio.fail_after(60), log.open("w") as errlog:
        params = gateway_params(config, "--log-level", "debug")
        async with Client(stdio_client(params, errlog=errlog), mode=era, cache=None) as client:
            assert {tool.name for tool in (await client.list_tools()).tools} >= {"one__pid", "three__pid"}
            pids = {name: int(text_of(await client.call_tool(f"{name}__pid", {}))) for name in servers}
            launched = {name: started_by(pid) for name, pid in pids.items()}
            assert text_of(await client.call_tool("two__echo", {"text": "through an adopted pipe"})) == (
                "through an adopted pipe"
            )
    text = log.read_text()
    started_early = {int(pid) for pid in ADOPTED.findall(text)}
    assert len(started_early) == 2  # as many as the start slots
    assert launched["one"] & started_early and launched["two"] & started_early
    assert not launched["three"] & started_early  # started by the pool, the usual way
    assert "did not use" not in text and "ignored SIGTERM" not in text


async def test_a_server_switched_off_at_run_time_is_not_started_early(tmp_path: Path):
    config_path = write_config(tmp_path, {"on": faulty(), "off": faulty()}, mode="passthrough")
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "servers.json").write_text(json.dumps({"disabled": ["off"]}))
    launches = first_launches(load_config(config_path))
    assert [launch.args for launch in launches] == [tuple(faulty()["args"])]


async def test_a_changed_command_is_not_adopted_and_an_unadopted_process_is_ended():
    launch = Launch.of(sys.executable, ["-c", "import sys; sys.stdin.read()"], {"PATH": "/usr/bin"}, None)
    assert prelaunch([launch], sys.stderr) == 1
    ((waiting,),) = _prelaunch._waiting.values()
    try:
        assert await adopt(launch.command, list(launch.args), {"PATH": "/usr/bin", "EXTRA": "1"}, None) is None
        assert await adopt(launch.command, list(launch.args), {"PATH": "/usr/bin"}, "/tmp") is None
    finally:
        assert discard() == 1
    assert waiting.popen.poll() is not None and not _prelaunch._waiting


def test_a_command_that_cannot_start_is_left_to_the_pool():
    missing = Launch.of("no-such-command-nexus", [], {"PATH": "/nonexistent"}, None)
    assert prelaunch([missing], sys.stderr) == 0 and not _prelaunch._waiting


async def test_an_adopted_process_reads_writes_and_ends_like_a_spawned_one():
    echo_upper = "import sys\nfor line in sys.stdin: print(line.upper(), end='', flush=True)"
    launch = Launch.of(sys.executable, ["-c", echo_upper], {"PATH": "/usr/bin"}, None)
    assert prelaunch([launch], sys.stderr) == 1
    process = await adopt(launch.command, list(launch.args), dict(launch.env), None)
    assert process is not None
    received = bytearray()
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            # Over a pipe buffer each way: written in parts, in order, while the other side reads.
            tg.start_soon(process.stdin.send, b"hello\n" * 50_000)
            while len(received) < 6 * 50_000:
                received += await process.stdout.receive()
        await process.stdin.aclose()
        assert await process.wait() == 0
        with pytest.raises(anyio.EndOfStream):
            await process.stdout.receive()
        await process.aclose()
    assert received == b"HELLO\n" * 50_000


async def test_an_adoption_cancelled_midway_ends_the_process_and_what_it_started():
    parent = (
        "import subprocess, sys; "
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        "print(child.pid, flush=True); sys.stdin.read()"
    )
    launch = Launch.of(sys.executable, ["-c", parent], {"PATH": "/usr/bin"}, None)
    assert prelaunch([launch], sys.stderr) == 1
    ((started,),) = _prelaunch._waiting.values()
    with anyio.fail_after(20):
        grandchild = int(started.stdout.recv(64).split()[0])  # blocking: the child prints its pid at once
        with anyio.CancelScope() as scope:
            scope.cancel()  # the gateway stops while the pool is taking the process
            await adopt(launch.command, list(launch.args), dict(launch.env), None)
        assert not _prelaunch._waiting
        assert started.popen.wait(timeout=10) is not None
        while psutil.pid_exists(grandchild) and psutil.Process(grandchild).status() != psutil.STATUS_ZOMBIE:
            await anyio.sleep(0.05)
