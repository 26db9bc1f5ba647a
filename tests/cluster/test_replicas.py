"""Three gateway replicas behind a real HAProxy (the config deploy/haproxy.py writes), driven by the official
client in both protocol eras (issue 26).

Every replica runs `serve --transport http` in passthrough mode with a bearer token (HAProxy's health checks send
it) in front of tests/cluster/replica_server.py, whose `whoami` tool names the replica that served the call.
HAProxy comes from the distribution (`apt-get install haproxy`; scripts/test.sh installs it).
"""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from nexus_gateway.bench._cluster import Cluster, MissingBinary, binary, running_cluster
from tests.conftest import text_of

pytestmark = pytest.mark.anyio

REPLICA_SERVER = str(Path(__file__).resolve().parent / "replica_server.py")
TOKEN = "cluster-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LEGACY_VERSION = "2025-06-18"


def servers(name: str) -> dict[str, Any]:
    return {"replica": {"command": sys.executable, "args": [REPLICA_SERVER], "env": {"NEXUS_TEST_REPLICA": name}}}


@pytest.fixture(scope="module")
def haproxy_installed() -> None:
    try:
        binary("haproxy", "haproxy")
    except MissingBinary as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, haproxy_installed: None) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("cluster"), servers, replicas=3, token=TOKEN) as running:
        yield running


@asynccontextmanager
async def client(url: str, era: str) -> AsyncIterator[Client]:
    async with (
        create_mcp_http_client(headers=AUTH) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=era, cache=None) as opened,  # type: ignore[arg-type]
    ):
        yield opened


async def whoami(session: Client) -> str:
    return text_of(await session.call_tool("replica__whoami", {}))


async def test_modern_era_requests_spread_over_every_replica_and_every_list_and_call_is_right(cluster: Cluster):
    served: list[str] = []
    with anyio.fail_after(60):

        async def one_client(number: int) -> None:
            async with client(cluster.url, "auto") as session:
                assert session.protocol_version >= "2026"
                for round_ in range(6):
                    names = {tool.name for tool in (await session.list_tools()).tools}
                    assert names == {"replica__echo", "replica__whoami", "replica__hold"}
                    text = f"client {number} round {round_}"
                    assert text_of(await session.call_tool("replica__echo", {"text": text})) == text
                    served.append(await whoami(session))

        async with anyio.create_task_group() as tg:
            for number in range(4):
                tg.start_soon(one_client, number)
    assert len(served) == 24
    assert set(served) == {"r1", "r2", "r3"}  # round-robin: no replica is left out, none holds a client


async def test_a_handshake_era_session_stays_on_the_replica_that_created_it(cluster: Cluster):
    homes: list[str] = []
    with anyio.fail_after(60):
        for _ in range(3):
            async with client(cluster.url, "legacy") as session:
                assert session.protocol_version < "2026"
                seen = {await whoami(session) for _ in range(6)}
                await session.list_tools()
                seen.add(await whoami(session))
                assert len(seen) == 1, seen
                homes.append(seen.pop())
    assert len(set(homes)) >= 2, homes  # the sessions themselves were balanced


async def test_an_sse_connection_stays_on_one_replica_by_haproxys_cookie(cluster: Cluster):
    with anyio.fail_after(60):
        transport = sse_client(f"{cluster.url}/sse", headers=AUTH)
        async with Client(transport, mode="legacy", cache=None) as session:  # type: ignore[arg-type]
            seen = {await whoami(session) for _ in range(6)}
            assert len(seen) == 1, seen
            assert text_of(await session.call_tool("replica__echo", {"text": "over sse"})) == "over sse"


async def test_a_replica_answers_404_for_a_session_it_does_not_hold(cluster: Cluster):
    """The spec's rule for a lost session (the client then initializes again): a session opened on one replica,
    sent straight to another, and a made-up id, are both 404."""
    first, second = cluster.replicas[0].url, cluster.replicas[1].url
    headers = {**AUTH, "Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": LEGACY_VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    with anyio.fail_after(30):
        async with httpx.AsyncClient(timeout=10) as http:
            opened = await http.post(f"{first}/mcp", json=initialize, headers=headers)
            assert opened.status_code == 200
            session = opened.headers["mcp-session-id"]
            held = {**headers, "Mcp-Session-Id": session, "Mcp-Protocol-Version": LEGACY_VERSION}
            assert (await http.post(f"{first}/mcp", json=ping, headers=held)).status_code == 200
            assert (await http.post(f"{second}/mcp", json=ping, headers=held)).status_code == 404
            made_up = {**held, "Mcp-Session-Id": "0" * 32}
            assert (await http.post(f"{first}/mcp", json=ping, headers=made_up)).status_code == 404
            await http.delete(f"{first}/mcp", headers=held)


async def test_a_killed_replica_fails_only_its_calls_in_flight_and_its_sessions_start_again_elsewhere(
    cluster: Cluster, tmp_path: Path
):
    """Runs last in this file: it kills a replica. Under load from both eras, replica r1 is killed while a call is
    surely in flight on it: that call fails; an idle handshake-era session on r1 then gets 404 and goes on after
    initializing again (on another replica); sessions on the other replicas and modern-era clients see no failure
    in any call started after the kill.

    Each client runs in a task of its own: the SDK ends a whole client when one of its requests loses its
    connection, and that must not reach the others."""
    marker = tmp_path / "held"
    killed = anyio.Event()
    killed_at: list[float] = []
    done = anyio.Event()
    ready: list[str] = []
    failures: list[tuple[str, float, str]] = []  # (who, when its call started, the error)
    in_flight: list[BaseException] = []
    after_404: list[str] = []

    @asynccontextmanager
    async def session_on(home: str) -> AsyncIterator[Client]:
        """A handshake-era session on replica `home` (round-robin brings one within a few tries)."""
        while True:
            async with client(cluster.url, "legacy") as session:
                if await whoami(session) == home:
                    yield session
                    return

    async def load(who: str, session: Client) -> None:
        ready.append(who)
        number = 0
        while not done.is_set():
            started = time.monotonic()
            text = f"{who} {number}"
            try:
                assert text_of(await session.call_tool("replica__echo", {"text": text})) == text
            except MCPError as exc:
                failures.append((who, started, str(exc)))
                return
            number += 1

    async def legacy_load(home: str) -> None:
        async with session_on(home) as session:
            await load(f"legacy {home}", session)

    async def modern_load(number: int) -> None:
        async with client(cluster.url, "auto") as session:
            await load(f"modern {number}", session)

    async def held_call() -> None:
        try:
            async with session_on("r1") as session:
                await session.call_tool("replica__hold", {"marker": str(marker), "seconds": 30})
        except Exception as exc:  # the SDK's MCPError, or its HTTP library's error once the stream breaks
            in_flight.append(exc)

    async def idle_session_on_r1() -> None:
        async with session_on("r1") as session:
            ready.append("idle r1")
            await killed.wait()
            try:
                await session.call_tool("replica__echo", {"text": "still there?"})
            except MCPError as exc:
                after_404.append(str(exc))
        async with client(cluster.url, "legacy") as again:  # initialize again: another replica
            after_404.append(await whoami(again))
            after_404.append(text_of(await again.call_tool("replica__echo", {"text": "back"})))

    with anyio.fail_after(90):
        async with anyio.create_task_group() as tg:
            tg.start_soon(idle_session_on_r1)
            for home in ("r2", "r3"):
                tg.start_soon(legacy_load, home)
            for number in range(3):
                tg.start_soon(modern_load, number)
            while len(ready) < 6:
                await anyio.sleep(0.01)
            tg.start_soon(held_call)
            while not marker.exists():
                await anyio.sleep(0.01)
            killed_at.append(time.monotonic())
            cluster.replicas[0].kill()
            killed.set()
            while not in_flight or len(after_404) < 3:
                await anyio.sleep(0.01)
            await anyio.sleep(1.0)  # the load goes on without r1 for a while
            done.set()

    assert len(in_flight) == 1  # the call in flight on r1 failed
    # Only a modern call in flight at the kill may have failed (it could have been on r1); nothing started
    # after the kill failed, and the sessions on r2 and r3 saw nothing.
    assert [f for f in failures if f[0].startswith("legacy") or f[1] > killed_at[0]] == [], failures
    assert len(failures) <= 1, failures
    lost, home, echoed = after_404
    assert "session" in lost.lower()  # 404: "Session not found"
    assert home in {"r2", "r3"} and echoed == "back"
    cluster.wait_for_states(lambda states: states.get("gw1") == "DOWN" and states.get("gw2") == "UP")
