"""Each host keeps its own `run` history through one daemon (the default packaged model generates).

Two hosts attach to one daemon through their shims, one in each protocol era, and ask `run` about the
weather in their own city. The engine session a call runs in belongs to its host's socket connection
(`ClientIdentity`, clients.py): the second host's first call finds an empty session (the first host's turn
did not leak into it), and each host's second call finds its own earlier turn (`session_depth` > 0; a request
that stands alone is filled without it, one that follows up on it reads it: `history`). The
modern era opens a new SDK connection for every request, so before the identity keyed the session, the
modern host's second call found an empty one again.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from nexus_gateway.daemon.locate import DaemonFiles
from tests.conftest import EXAMPLES, stdio_entry, text_of
from tests.daemon._helpers import daemon_config, host

pytestmark = pytest.mark.anyio

WEATHER = str(EXAMPLES / "servers" / "weather_server.py")
REQUEST = "What is the current weather in {city}?"


@pytest.fixture(scope="module")
def weather() -> Iterator[tuple[Path, DaemonFiles]]:
    with daemon_config({"weather": stdio_entry(WEATHER)}, mode="routed", run=True) as made:
        yield made


async def _run(client: Client, city: str, request: str = REQUEST) -> dict[str, Any]:
    result = await client.call_tool("run", {"request": request.format(city=city)})
    structured = result.structured_content or {}
    assert structured.get("status") == "called", text_of(result)
    trace = structured["trace"]
    assert trace["arguments"]["city"] == city and city in text_of(result), trace
    return dict(trace)


async def test_two_hosts_through_one_daemon_each_keep_their_own_run_history(weather):
    config, _ = weather
    with anyio.fail_after(900):
        async with host(config, "legacy") as paris, host(config, "auto") as tokyo:
            first_paris = await _run(paris, "Paris")
            first_tokyo = await _run(tokyo, "Tokyo")
            second_paris = await _run(paris, "Paris")
            second_tokyo = await _run(tokyo, "Tokyo")
            again = await _run(paris, "Paris", "What is the current weather in {city} again?")
    assert first_paris["session_depth"] == 0
    assert first_tokyo["session_depth"] == 0, "the other host's turn leaked into this host's session"
    assert first_tokyo["session"] != first_paris["session"]
    assert second_paris["session"] == first_paris["session"]
    assert second_tokyo["session"] == first_tokyo["session"], second_tokyo
    # a request that stands alone is filled without the history (its turn is queued, decoded when the engine is
    # idle); one that follows up on it reads it, the queued turns decoded first
    assert not second_paris["history"] and not second_tokyo["history"]
    assert again["history"] and again["session"] == first_paris["session"], again
    assert again["session_depth"] > 0, again
