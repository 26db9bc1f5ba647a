"""Faults of real upstream processes: the gateway keeps answering and recovers."""

import itertools
import os
import signal
import time
from pathlib import Path

import anyio
import psutil
import pytest

from nexus_gateway.gateway import Gateway
from nexus_gateway.upstreams.pool import START_GRACE, UpstreamState
from tests.conftest import ROOT, faulty, library, make_config, running_gateway, stdio_entry, text_of

pytestmark = pytest.mark.anyio


async def test_killed_upstream_errors_within_timeout_and_is_restarted(tmp_path: Path):
    config = make_config(tmp_path, {"one": faulty(), "two": faulty()}, mode="passthrough", call_timeout=3)
    async with running_gateway(config) as (gateway, client):
        one = gateway.pool.get("one")
        assert one is not None
        pid = int(text_of(await client.call_tool("one__pid", {})))
        os.kill(pid, signal.SIGKILL)
        with anyio.fail_after(4):
            failed = await client.call_tool("one__echo", {"text": "are you there?"})
        assert failed.is_error and "one" in text_of(failed)
        assert text_of(await client.call_tool("two__echo", {"text": "still here"})) == "still here"
        with anyio.fail_after(20):  # a restart is seconds on a loaded machine; speed is for benchmarks
            while not (one.restarts >= 1 and one.state is UpstreamState.HEALTHY):
                await anyio.sleep(0.05)
        recovered = await client.call_tool("one__echo", {"text": "back"})
        assert text_of(recovered) == "back"
        assert int(text_of(await client.call_tool("one__pid", {}))) != pid


async def test_hanging_call_times_out_and_the_upstream_keeps_serving(tmp_path: Path):
    config = make_config(tmp_path, {"one": faulty()}, mode="passthrough", call_timeout=1)
    async with running_gateway(config) as (_, client):
        started = time.monotonic()
        result = await client.call_tool("one__sleep", {"seconds": 30})
        assert result.is_error and "did not answer the call to 'sleep' within 1s" in text_of(result)
        assert time.monotonic() - started < 6  # the 30 s sleep was cut off near the 1 s timeout
        assert text_of(await client.call_tool("one__echo", {"text": "ok"})) == "ok"


async def test_upstream_that_never_starts_is_unhealthy_and_blocks_nobody(tmp_path: Path):
    servers = {"stuck": faulty("--hang-start", start_timeout=1.5), "fine": faulty()}
    config = make_config(tmp_path, servers, mode="passthrough")
    async with running_gateway(config) as (gateway, client):
        stuck = gateway.pool.get("stuck")
        assert stuck.state is not UpstreamState.HEALTHY and stuck.last_error == "did not start in time"  # type: ignore[union-attr]
        assert text_of(await client.call_tool("fine__echo", {"text": "hi"})) == "hi"
        result = await client.call_tool("stuck__echo", {"text": "hi"})
        assert result.is_error and "Upstream server 'stuck' is" in text_of(result)


async def test_upstream_printing_garbage_on_stdout_still_works(tmp_path: Path):
    async with running_gateway(make_config(tmp_path, {"noisy": faulty("--garbage")}, mode="passthrough")) as (
        gateway,
        client,
    ):
        assert text_of(await client.call_tool("noisy__echo", {"text": "signal"})) == "signal"
        assert gateway.pool.get("noisy").garbage_lines >= 2  # type: ignore[union-attr]


async def test_missing_command_is_reported_clearly(tmp_path: Path):
    servers = {"ghost": {"command": "definitely-not-a-real-command-xyz"}, "fine": faulty()}
    async with running_gateway(make_config(tmp_path, servers, mode="passthrough")) as (gateway, client):
        ghost = gateway.pool.get("ghost")
        assert ghost.state is not UpstreamState.HEALTHY  # type: ignore[union-attr]
        assert "definitely-not-a-real-command-xyz" in (ghost.last_error or "")  # type: ignore[union-attr]
        assert len((await client.list_tools()).tools) == 4


async def test_no_child_process_is_left_after_shutdown(tmp_path: Path):
    me = psutil.Process()
    before = {child.pid for child in me.children(recursive=True)}
    async with running_gateway(make_config(tmp_path, {"a": faulty(), "b": faulty()})) as (_, client):
        await client.list_tools()
        assert len({child.pid for child in me.children(recursive=True)} - before) >= 2
    left = [child for child in me.children(recursive=True) if child.pid not in before and child.is_running()]
    assert [child for child in left if child.status() != psutil.STATUS_ZOMBIE] == []


@pytest.mark.parametrize(
    ("method", "era"),
    [
        ("resources/templates/list", "legacy"),
        ("resources/templates/list", "auto"),
        ("resources/list", "auto"),
        ("prompts/list", "legacy"),
    ],
)
async def test_an_optional_list_answering_method_not_found_leaves_the_upstream_healthy_with_its_tools(
    tmp_path: Path, method: str, era: str, caplog: pytest.LogCaptureFixture
):
    servers = {"partial": faulty("--unsupported", method)}
    config = make_config(tmp_path, servers, mode="passthrough", start_timeout=60)  # a loaded machine starts slowly
    async with running_gateway(config, era=era) as (gateway, client):
        partial = gateway.pool.get("partial")
        assert partial is not None and partial.state is UpstreamState.HEALTHY and partial.restarts == 0
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"partial__echo", "partial__pid", "partial__sleep", "partial__grow"} <= names
        assert text_of(await client.call_tool("partial__echo", {"text": "still served"})) == "still served"
        resources = [str(resource.uri) for resource in (await client.list_resources()).resources]
        assert resources == ([] if method == "resources/list" else ["faulty://about"])
        # A re-listing (tools/list_changed) asks again but does not log again: once per connection.
        await client.call_tool("partial__grow", {"name": "late_tool"})
        with anyio.fail_after(5):
            while "partial__late_tool" not in gateway.catalog:
                await anyio.sleep(0.05)
        assert partial.state is UpstreamState.HEALTHY and partial.restarts == 0
    warnings = [r for r in caplog.records if r.levelname == "WARNING" and f"{method} failed" in r.getMessage()]
    assert len(warnings) == 1 and "partial" in warnings[0].getMessage()


async def test_a_missing_working_directory_is_not_reported_as_a_missing_command(tmp_path: Path):
    servers = {"lost": faulty(cwd=str(tmp_path / "nowhere")), "fine": faulty()}
    async with running_gateway(make_config(tmp_path, servers, mode="passthrough")) as (gateway, _):
        lost = gateway.pool.get("lost")
        assert lost is not None and lost.state is not UpstreamState.HEALTHY
        assert lost.last_error == f"working directory not found: {tmp_path / 'nowhere'}"


def test_a_missing_file_other_than_the_command_is_named_as_such():
    from nexus_gateway.config import StdioServer
    from nexus_gateway.upstreams.pool import _describe

    spec = StdioServer(command="uvx", args=["mcp-server-time"])
    missing_state = FileNotFoundError(2, "No such file or directory", "/proc/nexus/descriptions.json")
    assert _describe(missing_state, spec) == "file not found: /proc/nexus/descriptions.json"
    assert _describe(FileNotFoundError(2, "No such file or directory", "uvx"), spec) == "command not found: uvx"


async def test_a_start_slower_than_start_timeout_is_reported_late_then_healthy_without_a_restart(tmp_path: Path):
    """A server slower to start than `start_timeout` (a cold `npx`, a loaded machine) is not killed at the
    deadline and relaunched, losing the work it had done: it is reported as not started (so tools/list does
    not wait for it), and the same process becomes healthy when it is ready."""
    slow = library("--start-delay", "3", start_timeout=2.5)  # late for sure; within 4 x 2.5 s on a loaded machine
    config = make_config(tmp_path, {"slow": slow}, mode="passthrough")
    async with running_gateway(config) as (gateway, client):
        slow_upstream = gateway.pool.get("slow")
        assert slow_upstream is not None and slow_upstream.last_error == "did not start in time"
        with anyio.fail_after(30):
            while slow_upstream.state is not UpstreamState.HEALTHY:
                await anyio.sleep(0.05)
        assert slow_upstream.restarts == 0
        assert [tool.name for tool in (await client.list_tools()).tools]


async def test_a_start_that_never_answers_is_abandoned_only_at_four_times_start_timeout(tmp_path: Path):
    """Past `start_timeout` the stuck server's process is still the one first launched; it is ended and
    launched again once START_GRACE times `start_timeout` has passed."""
    assert START_GRACE == 4
    config = make_config(tmp_path, {"stuck": faulty("--hang-start", start_timeout=1.0)}, mode="passthrough")
    earlier = {process.pid for process in _faulty_processes()}  # another test's, still stopping
    async with Gateway(config) as gateway:
        await gateway.wait_ready()
        stuck = gateway.pool.get("stuck")
        assert stuck is not None and stuck.last_error == "did not start in time" and stuck.restarts == 0
        first = [process for process in _faulty_processes() if process.pid not in earlier]
        assert len(first) == 1 and first[0].is_running() and first[0].status() != psutil.STATUS_ZOMBIE
        with anyio.fail_after(30):
            while stuck.restarts < 1:
                await anyio.sleep(0.05)
        assert not first[0].is_running() or first[0].status() == psutil.STATUS_ZOMBIE


def _faulty_processes() -> list[psutil.Process]:
    return [
        child
        for child in psutil.Process().children(recursive=True)
        if "faulty_server" in " ".join(child.cmdline()) and "_launch" not in " ".join(child.cmdline())
    ]


async def test_a_start_past_its_start_timeout_frees_its_start_slot_and_goes_on(tmp_path: Path):
    """One start slot: the stuck server takes it first; past its start_timeout it lets the next server
    start, while its own first start goes on (no restart)."""
    servers = {"stuck": faulty("--hang-start", start_timeout=2.0), "fine": faulty(start_timeout=60)}
    config = make_config(tmp_path, servers, mode="passthrough", max_concurrent_starts=1)
    async with Gateway(config) as gateway:
        stuck, fine = gateway.pool.get("stuck"), gateway.pool.get("fine")
        assert stuck is not None and fine is not None
        with anyio.fail_after(30):
            while fine.state is not UpstreamState.HEALTHY:
                await anyio.sleep(0.05)
        assert stuck.restarts == 0 and stuck.state is UpstreamState.UNHEALTHY


async def test_upstreams_wait_for_a_start_slot_and_their_clock_starts_there(tmp_path: Path):
    """With one start slot, three servers start one after another (each sleeps 2 s before serving), and
    the time the second and third wait for the slot does not count against their start timeout."""
    script = str(ROOT / "tests" / "servers" / "library_server.py")
    servers = {name: {**stdio_entry(script, "--start-delay", "2"), "start_timeout": 7} for name in "abc"}
    config = make_config(tmp_path, servers, mode="passthrough", max_concurrent_starts=1)
    async with running_gateway(config) as (gateway, _):
        states = {status.name: (status.state, status.restarts) for status in gateway.pool.statuses()}
        children = psutil.Process().children(recursive=True)
        commands = [(p.create_time(), " ".join(p.cmdline())) for p in children]
        started = sorted(at for at, line in commands if "library_server" in line and "_launch" not in line)
    assert states == {name: (UpstreamState.HEALTHY, 0) for name in "abc"}
    assert len(started) == 3 and all(later - earlier > 1.5 for earlier, later in itertools.pairwise(started))
