"""One daemon for every host: real `nexus-gateway connect` shims (launched by the official client over stdio,
as a host does) against a real `nexus-gateway daemon`, with real upstream processes behind it.

The module shares one daemon, started by the first shim that finds none; the tests run in file order and
build on it (two hosts, a killed shim, a crashed upstream, a second daemon); the last ones start their own.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import psutil
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from nexus_gateway.daemon import control
from nexus_gateway.daemon.locate import DaemonFiles
from nexus_gateway.runtime import preamble
from tests.conftest import FAULTY, ROOT, stdio_entry, text_of
from tests.daemon._helpers import cli, daemon_config, daemons, eventually, host, shim, shims, upstreams
from tests.server.test_forwarding import Host

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

FEATURES = str(ROOT / "tests" / "servers" / "features_server.py")
WAIT = 120
"""Seconds for anything that starts processes: minutes when other jobs share the machine's two cores."""


@pytest.fixture(scope="module")
def shared() -> Iterator[tuple[Path, DaemonFiles]]:
    servers = {"faulty": stdio_entry(FAULTY), "features": stdio_entry(FEATURES)}
    profiles = {"work": {"servers": ["*"]}, "echo-only": {"servers": ["faulty"], "include_tools": ["*echo"]}}
    with daemon_config(servers, mode="passthrough", profiles=profiles) as made:
        yield made


async def _started(config: Path, files: DaemonFiles) -> None:
    """The module's daemon, started by a shim as a host would when none runs yet (a test run alone)."""
    if not files.running():
        with anyio.fail_after(WAIT):
            async with host(config, "legacy") as client:
                await client.list_tools()


async def _running(files: DaemonFiles) -> dict[str, Any]:
    report = await control.status(files)
    assert report is not None, "no daemon runs"
    return report


async def test_two_hosts_in_both_eras_share_one_daemon_with_one_process_per_upstream(shared):
    config, files = shared
    assert not files.running()
    with anyio.fail_after(WAIT):
        async with host(config, "legacy") as first, host(config, "auto", "--profile", "work") as second:
            for client in (first, second):
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert {"faulty__echo", "features__progress"} <= names
            assert text_of(await first.call_tool("faulty__echo", {"text": "from one"})) == "from one"
            assert text_of(await second.call_tool("faulty__echo", {"text": "from two"})) == "from two"
            report = await _running(files)
            pid = report["pid"]
            assert [process.pid for process in daemons(config)] == [pid]
            assert len(upstreams(pid, FAULTY)) == 1 and len(upstreams(pid, FEATURES)) == 1
            pids = {text_of(await client.call_tool("faulty__pid", {})) for client in (first, second)}
            assert pids == {str(upstreams(pid, FAULTY)[0].pid)}  # the very same upstream process for both
            clients = report["clients"]
            assert sorted((c["profile"] or "", c["transport"]) for c in clients) == [("", "socket"), ("work", "socket")]
            assert {c["pid"] for c in clients} == {process.pid for process in shims(config)}
    await _until_clients(files, 0)
    assert files.running()  # both hosts have quit; the daemon stays


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_progress_logs_and_requests_for_input_reach_the_host_through_the_shim(shared, era):
    config, _ = shared
    asker = Host()
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    with anyio.fail_after(WAIT):
        async with asker.client(shim(config), era, log_level="info") as client:
            result = await client.call_tool("features__progress", {"steps": 3}, progress_callback=on_progress)
            assert text_of(result) == "done"
            assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
            if era == "legacy":
                await client.set_logging_level("info")
            await client.call_tool("features__log", {"level": "warning", "text": "careful"})
            assert text_of(await client.call_tool("features__sample", {"prompt": "2+2?"})) == "host answers 2+2?"
            assert text_of(await client.call_tool("features__elicit_form", {"message": "Name?"})) == "accept:host"
            assert text_of(await client.call_tool("features__roots", {})) == "file:///work/project"
            with anyio.move_on_after(1.0):  # the host gives up on a slow call: the upstream's call is cancelled
                await client.call_tool("features__slow", {"seconds": 60})
            with anyio.fail_after(20):
                while text_of(await client.call_tool("features__cancelled", {})) == "0":
                    await anyio.sleep(0.05)
    assert [(log.level, log.data) for log in asker.logs] == [("warning", "careful")]
    assert asker.asked == ["sampling", "form Name?"]


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_a_shims_profile_limits_what_its_host_sees_and_calls_and_an_unknown_one_is_refused(shared, era):
    config, files = shared
    await _started(config, files)
    with anyio.fail_after(WAIT):
        async with host(config, era, "--profile", "echo-only") as limited, host(config, era) as everything:
            assert {tool.name for tool in (await limited.list_tools()).tools} == {"faulty__echo"}
            assert "features__progress" in {tool.name for tool in (await everything.list_tools()).tools}
            assert text_of(await limited.call_tool("faulty__echo", {"text": "in"})) == "in"
            outside = await limited.call_tool("faulty__pid", {})
            assert outside.is_error and "faulty__pid" in text_of(outside)
            assert text_of(await everything.call_tool("faulty__pid", {})).isdigit()
        refused = await anyio.to_thread.run_sync(
            lambda: cli("connect", "--config", str(config), "--profile", "nope", timeout=WAIT)
        )
    assert refused.returncode != 0 and "Unknown profile 'nope'" in refused.stderr, refused.stderr


async def test_killing_one_shim_leaves_the_other_host_and_the_daemon_working(shared):
    config, files = shared
    initialize = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
    with anyio.fail_after(WAIT):
        async with host(config, "legacy") as survivor:
            await survivor.list_tools()
            command = [sys.executable, "-m", "nexus_gateway", "connect", "--config", str(config)]
            async with await anyio.open_process(command) as doomed:  # a host at the wire level
                assert doomed.stdin is not None and doomed.stdout is not None
                request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize}
                await doomed.stdin.send(json.dumps(request).encode() + b"\n")
                answer = await BufferedByteReceiveStream(doomed.stdout).receive_until(b"\n", 1 << 20)
                assert json.loads(answer)["result"]["serverInfo"]["name"] == "nexus-gateway"
                await _until_clients(files, 2)
                doomed.kill()  # the host's shim dies (the host quit, or crashed)
            await _until_clients(files, 1)
            assert text_of(await survivor.call_tool("faulty__echo", {"text": "still here"})) == "still here"
    await _until_clients(files, 0)
    assert files.running()


async def _until_clients(files: DaemonFiles, count: int) -> None:
    with anyio.fail_after(30):
        while len((await _running(files))["clients"]) != count:
            await anyio.sleep(0.05)


async def test_a_crashed_upstream_is_restarted_once_for_both_hosts(shared):
    config, files = shared
    with anyio.fail_after(WAIT):
        async with host(config, "legacy") as first, host(config, "auto") as second:
            crashed = int(text_of(await first.call_tool("faulty__pid", {})))
            os.kill(crashed, signal.SIGKILL)
            with anyio.fail_after(60):
                while True:
                    restarted = [text_of(await client.call_tool("faulty__pid", {})) for client in (first, second)]
                    if all(answer.isdigit() and int(answer) != crashed for answer in restarted):
                        break
                    await anyio.sleep(0.1)
            assert restarted[0] == restarted[1]  # one new process serves both hosts
            report = await _running(files)
            (faulty,) = [upstream for upstream in report["upstreams"] if upstream["name"] == "faulty"]
            assert faulty["restarts"] == 1 and faulty["state"] == "healthy"
            assert [process.pid for process in upstreams(report["pid"], FAULTY)] == [int(restarted[0])]


async def test_a_second_daemon_refuses_to_start_and_the_first_keeps_serving(shared):
    config, files = shared
    await _started(config, files)
    running = (await _running(files))["pid"]
    done = await anyio.to_thread.run_sync(lambda: cli("daemon", "--config", str(config)))
    assert done.returncode == 2, done.stderr
    assert "a daemon already runs" in done.stderr and f"pid {running}" in done.stderr
    assert (await _running(files))["pid"] == running and files.socket.exists()
    with anyio.fail_after(WAIT):
        async with host(config, "auto") as client:
            assert text_of(await client.call_tool("faulty__echo", {"text": "one daemon"})) == "one daemon"


async def test_the_daemon_files_are_private_and_http_takes_only_the_token(shared):
    config, files = shared
    await _started(config, files)
    assert stat.S_IMODE(files.folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(files.token.stat().st_mode) == 0o600
    assert stat.S_IMODE(files.socket.stat().st_mode) == 0o600
    info = files.read_info()
    assert info is not None and info.url.startswith("http://127.0.0.1:") and info.socket == str(files.socket)
    assert info.pid == (await _running(files))["pid"] and info.uptime() > 0
    async with httpx.AsyncClient(base_url=info.url, timeout=30) as http:
        assert (await http.get("/healthz")).status_code == 401
        wrong = await http.get("/healthz", headers={"Authorization": "Bearer not-the-token"})
        assert wrong.status_code == 401
        right = await http.get("/healthz", headers={"Authorization": f"Bearer {files.read_token()}"})
    assert right.status_code == 200 and right.json()["upstreams"] == {"faulty": "healthy", "features": "healthy"}


async def test_a_connection_without_the_preamble_is_refused_with_a_reason(shared):
    config, files = shared
    await _started(config, files)
    with anyio.fail_after(30):
        async with await anyio.connect_unix(files.socket) as stream:
            await stream.send(b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n')
            answer = await stream.receive()
    kind, body = preamble.parse(answer)
    assert kind == preamble.REFUSED and "send the 'nexus-connect' preamble line first" in body["message"]


async def test_two_shims_starting_at_once_make_one_daemon_and_stop_ends_it_and_its_upstreams():
    with daemon_config({"faulty": stdio_entry(FAULTY)}, mode="passthrough") as (config, files):
        answers: list[str] = []
        both_answered = anyio.Event()

        async def attach(era: str) -> None:
            async with host(config, era) as client:  # launched at the same moment: both find no daemon
                answers.append(text_of(await client.call_tool("faulty__echo", {"text": "race"})))
                if len(answers) == 2:
                    both_answered.set()
                await both_answered.wait()  # both connected at once

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(attach, "legacy")
                tg.start_soon(attach, "auto")
                await both_answered.wait()
                report = await _running(files)
                assert len(report["clients"]) == 2
        assert answers == ["race", "race"]
        assert files.log.read_text().count(" ready: ") == 1  # a second daemon, if one was started, never served
        # the shims may each have started a daemon: the one without the lock exits
        await eventually(lambda: [process.pid for process in daemons(config)] == [report["pid"]], WAIT)
        (upstream,) = upstreams(report["pid"], FAULTY)
        done = await anyio.to_thread.run_sync(lambda: cli("daemon", "stop", "--config", str(config)))
        assert done.returncode == 0 and f"stopped the daemon (pid {report['pid']})" in done.stdout, done.stderr
        assert not psutil.pid_exists(report["pid"]) or psutil.Process(report["pid"]).status() == "zombie"
        assert not upstream.is_running() and daemons(config) == []
        assert not files.socket.exists() and not files.info.exists() and not files.running()
        after = await anyio.to_thread.run_sync(lambda: cli("daemon", "status", "--config", str(config)))
        assert after.returncode == 1 and "no daemon runs" in after.stdout


async def test_connect_says_why_when_the_daemon_it_started_cannot_run():
    """The file parses (so the shim starts a daemon) but `serve` rejects its embedder: the shim exits with the
    daemon's own error, not a hang."""
    with daemon_config({"faulty": stdio_entry(FAULTY)}, embedder="no-such-embedder") as (config, files):
        command = [sys.executable, "-m", "nexus_gateway", "connect", "--config", str(config), "--wait", "60"]
        with anyio.fail_after(WAIT):
            done = await anyio.run_process(command, input=b"", check=False)
    stderr = done.stderr.decode()
    assert done.returncode == 2, stderr
    assert "error: the daemon exited with status 2 before it listened" in stderr
    assert "key 'embedder'" in stderr and not files.running()


async def test_after_the_daemon_is_killed_the_next_host_starts_a_fresh_one():
    """kill -9 leaves the socket and daemon.json behind; the lock tells the next shim that nothing runs."""
    with daemon_config({"faulty": stdio_entry(FAULTY)}, mode="passthrough") as (config, files):
        with anyio.fail_after(WAIT):
            async with host(config, "legacy") as client:
                await client.list_tools()
        killed = (await _running(files))["pid"]
        (upstream,) = upstreams(killed, FAULTY)
        os.kill(killed, signal.SIGKILL)
        await eventually(lambda: not files.running() and not upstream.is_running(), WAIT)
        assert files.socket.exists() and files.info.exists()  # left behind
        with anyio.fail_after(WAIT):
            async with host(config, "auto") as client:
                assert text_of(await client.call_tool("faulty__echo", {"text": "again"})) == "again"
                fresh = await _running(files)
        assert fresh["pid"] != killed and files.read_info() is not None and files.read_info().pid == fresh["pid"]
