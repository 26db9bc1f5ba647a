"""`bench startup`: the direct baseline starts every server at once, and the summary pairs runs by round."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from nexus_gateway.bench.startup import direct, summarize
from tests.conftest import faulty, library, make_config

pytestmark = pytest.mark.anyio


async def test_the_direct_baseline_starts_every_server_and_reports_each_and_the_slowest(tmp_path: Path):
    servers = {"one": faulty(), "two": library(), "ghost": {"command": "definitely-not-a-real-command-xyz"}}
    config = make_config(tmp_path, servers)
    with anyio.fail_after(60):
        result = await direct(config, timeout=50, errlog=sys.stderr)
    outcomes = result["servers"]
    assert outcomes["one"]["ok"] and outcomes["one"]["tools"] == 4
    assert outcomes["two"]["ok"] and outcomes["two"]["all_lists_seconds"] >= outcomes["two"]["seconds"]
    assert not outcomes["ghost"]["ok"]
    assert (result["answered"], result["of"]) == (2, 3)
    assert result["seconds_to_all_answered"] == max(outcomes["one"]["seconds"], outcomes["two"]["seconds"])


def test_the_constant_is_each_rounds_gateway_all_healthy_minus_that_rounds_direct_all_answered():
    runs = [
        {"kind": "direct", "round": 0, "seconds_to_all_answered": 40.0, "seconds_to_all_listed": 41.0},
        {"kind": "direct", "round": 1, "seconds_to_all_answered": 50.0, "seconds_to_all_listed": 51.0},
        *(
            {
                "kind": "gateway-passthrough",
                "round": index,
                "seconds_to_all_healthy": healthy,
                "seconds_to_first_tools_list": healthy,
                "seconds_to_index_ready": None,
                "restarts": {},
            }
            for index, healthy in ((0, 44.0), (1, 60.0))
        ),
    ]
    summary = summarize(runs, ["passthrough"])["passthrough"]
    assert summary["constant_s"] == [4.0, 10.0] and summary["ratio"] == [1.1, 1.2]
    assert summary["median_constant_s"] == 7.0
