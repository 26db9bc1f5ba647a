"""Upstreams start slowest first, by the start times the gateway recorded the last time it ran."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from nexus_gateway.config import load_config
from nexus_gateway.gateway import Gateway
from nexus_gateway.upstreams._prelaunch import PRELAUNCH_MAX, first_launches
from nexus_gateway.upstreams.pool import Upstream, UpstreamPool
from nexus_gateway.upstreams.start_order import FILE, load_start_times, save_start_times, slowest_first
from tests.conftest import faulty, make_config, write_config

pytestmark = pytest.mark.anyio


def test_unknown_servers_come_first_then_the_longest_last_start_with_ties_in_config_order():
    seconds = {"quick": 1.0, "slow": 30.0, "tie-a": 5.0, "tie-b": 5.0}
    order = slowest_first(["quick", "tie-a", "new", "slow", "tie-b", "newer"], seconds)
    assert order == ["new", "newer", "slow", "tie-a", "tie-b", "quick"]


def test_start_times_survive_a_save_and_keep_servers_not_started_this_time(tmp_path: Path):
    assert load_start_times(tmp_path) == {}
    assert save_start_times(tmp_path, {"a": 3.14159, "b": 7.0})
    assert save_start_times(tmp_path, {"b": 2.0})
    assert load_start_times(tmp_path) == {"a": 3.14, "b": 2.0}


def test_a_damaged_start_times_file_means_config_order_and_is_moved_aside(tmp_path: Path):
    (tmp_path / FILE).write_text('{"format": 1, "seconds": [1, 2')
    assert load_start_times(tmp_path) == {}
    assert slowest_first(["b", "a"], load_start_times(tmp_path)) == ["b", "a"]
    assert not (tmp_path / FILE).exists() and list(tmp_path.glob(f"{FILE}.corrupt-*"))


def test_the_servers_started_before_the_imports_are_the_slowest_last_time(tmp_path: Path):
    names = [f"s{index}" for index in range(PRELAUNCH_MAX + 2)]
    servers = {name: faulty("--name", name) for name in names}
    config_path = write_config(tmp_path, servers, mode="passthrough")
    took = {name: float(index) for index, name in enumerate(names)}  # the last in the config were the slowest
    save_start_times(tmp_path / "state", took)
    launches = first_launches(load_config(config_path))
    started = [launch.args[launch.args.index("--name") + 1] for launch in launches]
    assert started == list(reversed(names))[:PRELAUNCH_MAX]


async def ignore(upstream: Upstream) -> None:
    pass


async def test_a_start_records_every_upstreams_time_and_the_next_pool_opens_the_slowest_first(tmp_path: Path):
    config = make_config(
        tmp_path, {"first": faulty(), "second": faulty(), "broken": faulty("--hang-start", start_timeout=0.5)}
    )
    state = tmp_path / "state"
    with anyio.fail_after(60):
        async with Gateway(config) as gateway:
            await gateway.wait_ready()
            while not (state / FILE).exists():  # written once the hanging start is abandoned too
                await anyio.sleep(0.05)
    seconds = json.loads((state / FILE).read_text())["seconds"]
    assert set(seconds) == {"first", "second"} and all(0 < value < 30 for value in seconds.values())

    save_start_times(state, {"first": 1.0, "second": 9.0})
    opened: list[str] = []
    pool = UpstreamPool(config, on_listing=ignore)
    for upstream in pool.upstreams.values():
        original = upstream.supervise

        async def supervise(name: str = upstream.name, run=original) -> None:
            opened.append(name)
            await run()

        upstream.supervise = supervise  # type: ignore[method-assign]
    with anyio.fail_after(30):
        async with pool:
            await pool.wait_started()
    assert opened == ["broken", "second", "first"]  # never recorded (it never started), then longest first
