"""Three gateway replicas behind a real HAProxy (the config deploy/haproxy.py writes) sharing a real Redis,
driven by the official client in both protocol eras (issue 26).

Every replica runs `serve --transport http` in passthrough mode with a bearer token (HAProxy's health checks send
it) and `cluster.redis_url`, in front of tests/cluster/replica_server.py, whose `whoami` tool names the replica
that served the call. HAProxy and Redis come from the distribution (`apt-get install haproxy redis-server`;
scripts/test.sh installs them). A test that kills a replica or stops Redis starts it again before it ends.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any
from uuid import uuid4

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from nexus_gateway.bench.cluster.processes import Cluster, MissingBinary, binary, running_cluster
from tests.conftest import text_of

pytestmark = pytest.mark.anyio

REPLICA_SERVER = str(Path(__file__).resolve().parent / "replica_server.py")
TOKEN = "cluster-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LEGACY_VERSION = "2025-06-18"


def servers(name: str) -> dict[str, Any]:
    return {"replica": {"command": sys.executable, "args": [REPLICA_SERVER], "env": {"NEXUS_TEST_REPLICA": name}}}


@pytest.fixture(scope="module")
def binaries_installed() -> None:
    try:
        binary("haproxy", "haproxy")
        binary("redis-server", "redis-server")
    except MissingBinary as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, binaries_installed: None) -> Iterator[Cluster]:
    folder = tmp_path_factory.mktemp("cluster")
    with running_cluster(folder, servers, replicas=3, token=TOKEN, redis=True, redis_persist=True) as running:
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
                    assert {"replica__echo", "replica__whoami", "replica__hold", "replica__redefine"} <= names
                    text = f"client {number} round {round_}"
                    assert text_of(await session.call_tool("replica__echo", {"text": text})) == text
                    served.append(await whoami(session))

        async with anyio.create_task_group() as tg:
            for number in range(4):
                tg.start_soon(one_client, number)
        async with client(cluster.url, "auto") as session:  # alone: one client's requests go round the replicas
            alone = [await whoami(session) for _ in range(9)]
    assert len(served) == 24
    assert set(served) == {"r1", "r2", "r3"}  # round-robin: no replica is left out
    assert len(set(alone)) >= 2, alone  # no replica holds a client


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

    calling: dict[str, float] = {}  # who -> when its current call started
    after_kill: dict[str, int] = {}  # who -> calls it started after the kill that succeeded

    async def load(who: str, session: Client) -> None:
        ready.append(who)
        number = 0
        while not done.is_set():
            calling[who] = time.monotonic()
            text = f"{who} {number}"
            assert text_of(await session.call_tool("replica__echo", {"text": text})) == text
            number += 1
            if killed_at and calling[who] > killed_at[0]:
                after_kill[who] = after_kill.get(who, 0) + 1

    async def loaded(who: str, session: AbstractAsyncContextManager[Client]) -> None:
        """`load` on a client, a failure recorded with when its call started: an MCP error, or the HTTP
        library's error with which the SDK ends a client whose request lost its connection."""
        try:
            async with session as opened:
                await load(who, opened)
        except Exception as exc:
            failures.append((who, calling.get(who, 0.0), repr(exc)))

    async def legacy_load(home: str) -> None:
        await loaded(f"legacy {home}", session_on(home))

    async def modern_load(number: int) -> None:
        await loaded(f"modern {number}", client(cluster.url, "auto"))

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
    # Only a modern call in flight at the kill may have failed (it could have been on r1): nothing started after
    # the kill failed, and the sessions on r2 and r3 saw nothing.
    assert [f for f in failures if f[0].startswith("legacy") or f[1] > killed_at[0]] == [], failures
    assert {"legacy r2", "legacy r3"} <= after_kill.keys() and any(who.startswith("modern") for who in after_kill)
    lost, home, echoed = after_404
    assert "session" in lost.lower()  # 404: "Session not found"
    assert home in {"r2", "r3"} and echoed == "back"
    cluster.wait_for_states(lambda states: states.get("gw1") == "DOWN" and states.get("gw2") == "UP")
    cluster.replicas[0].start_again()  # as it was, for the tests after this one
    cluster.wait_for_states(lambda states: set(states.values()) == {"UP"})


async def health(url: str) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=10) as http:
        answer = await http.get(f"{url}/healthz", headers=AUTH)
        answer.raise_for_status()
        body: dict[str, Any] = answer.json()
        return body


async def until(condition: Callable[[], Awaitable[bool]], seconds: float, what: str) -> None:
    try:
        with anyio.fail_after(seconds):
            while not await condition():
                await anyio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"not within {seconds:g}s: {what}") from None


async def served_tools(url: str) -> dict[str, str]:
    """name -> description of what a replica (or the balancer) lists now, asked in the modern era."""
    async with client(url, "auto") as session:
        return {tool.name: tool.description or "" for tool in (await session.list_tools()).tools}


async def approve_through_the_balancer(cluster: Cluster, name: str) -> str:
    """Approve the quarantined `name` on the dashboard reached through HAProxy (its cookie keeps the browser on one
    replica, whose sign-in and form token are its own); the replica that took it (gw1..gw3)."""
    async with httpx.AsyncClient(base_url=cluster.url, timeout=10, follow_redirects=False) as browser:
        signed_in = await browser.get("/ui/", params={"token": TOKEN})
        assert signed_in.status_code == 200 and "nexus_ui" in browser.cookies, signed_in.text[:500]
        page = (await browser.get("/ui/quarantine")).text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page)
        assert csrf is not None and f'data-tool="{name}"' in page, page[:2000]
        section = page[page.index(f'data-tool="{name}"') :]
        reviewed = re.search(r'name="hash" value="([0-9a-f]{16})"', section)
        assert reviewed is not None
        form = {"name": name, "csrf": csrf.group(1), "hash": reviewed.group(1)}
        approved = await browser.post("/ui/quarantine/approve", data=form, headers={"Origin": cluster.url})
        assert approved.status_code == 303, approved.text[:2000]
        return browser.cookies["NEXUS_REPLICA"]


async def quarantined_everywhere(cluster: Cluster, name: str) -> bool:
    for replica in cluster.replicas:
        if name not in {entry["name"] for entry in (await health(replica.url))["quarantined"]}:
            return False
    return True


async def test_an_approval_made_through_one_replica_is_what_every_replica_serves_within_a_second(cluster: Cluster):
    description = f"Echo, version {uuid4().hex[:8]}."
    with anyio.fail_after(60):
        for replica in cluster.replicas:  # every replica's upstream now lists a new definition of echo
            async with client(replica.url, "auto") as session:
                redefined = await session.call_tool("replica__redefine", {"description": description})
                assert text_of(redefined) == "redefined"
        await until(lambda: quarantined_everywhere(cluster, "replica__echo"), 10, "every replica quarantines it")
        for replica in cluster.replicas:  # still the approved definition, never the new one
            assert (await served_tools(replica.url))["replica__echo"] != description

        seen: dict[str, float] = {}
        async with AsyncExitStack() as stack:  # one open client per replica, each polled by its own task
            sessions = {r.name: await stack.enter_async_context(client(r.url, "auto")) for r in cluster.replicas}
            took_it = await approve_through_the_balancer(cluster, "replica__echo")
            approved_at = time.monotonic()

            async def watch(name: str, session: Client) -> None:
                while True:
                    tools = {tool.name: tool.description for tool in (await session.list_tools()).tools}
                    if tools.get("replica__echo") == description:
                        seen[name] = time.monotonic() - approved_at
                        return
                    await anyio.sleep(0.01)

            with anyio.fail_after(5):
                async with anyio.create_task_group() as tg:
                    for name, session in sessions.items():
                        tg.start_soon(watch, name, session)
    assert took_it in {"gw1", "gw2", "gw3"}
    assert max(seen.values()) < 1.0, seen
    for replica in cluster.replicas:
        assert not await quarantined_everywhere(cluster, "replica__echo")
        assert (await health(replica.url))["store"]["state"] == "ok"


async def test_while_redis_is_down_nothing_unapproved_is_served_and_service_comes_back_without_a_restart(
    cluster: Cluster,
):
    fresh = f"fresh_{uuid4().hex[:8]}"
    exposed = f"replica__{fresh}"
    pids = [replica.process.pid for replica in cluster.replicas]

    async def store_state_everywhere(state: str) -> bool:
        states = [(await health(replica.url))["store"]["state"] for replica in cluster.replicas]
        return states == [state] * len(states)

    with anyio.fail_after(90):
        cluster.stop_redis()
        try:
            await until(lambda: store_state_everywhere("degraded"), 15, "every replica reports its store degraded")
            async with client(cluster.url, "auto") as session:  # what was approved is still served, by any replica
                for number in range(6):
                    text = f"without redis {number}"
                    assert text_of(await session.call_tool("replica__echo", {"text": text})) == text
            for replica in cluster.replicas:  # a tool none of them can confirm an approval for
                async with client(replica.url, "auto") as session:
                    assert text_of(await session.call_tool("replica__add", {"name": fresh})) == "added"
            await until(lambda: quarantined_everywhere(cluster, exposed), 10, "every replica withholds the new tool")
            for replica in cluster.replicas:
                assert exposed not in await served_tools(replica.url)
                async with client(replica.url, "auto") as session:
                    refused = await session.call_tool(exposed, {})
                    assert refused.is_error and fresh not in text_of(refused).replace(exposed, "")
        finally:
            cluster.start_redis_again()

        # Back without a restart: every replica reconnects by itself; the same processes serve.
        await until(lambda: store_state_everywhere("ok"), 15, "every replica's store is ok again")
        assert [replica.process.pid for replica in cluster.replicas] == pids
        async with client(cluster.url, "auto") as session:
            assert text_of(await session.call_tool("replica__echo", {"text": "redis is back"})) == "redis is back"

        # Redis kept its data (an append-only file, as docs/state.md asks): approvals can be confirmed again, so
        # every replica judges the new tool as one gateway does (a new tool of a known server is pinned on first
        # sight), alike, and trusts its store again.
        async def every_replica_serves_the_new_tool() -> bool:
            served = [exposed in await served_tools(replica.url) for replica in cluster.replicas]
            return all(served)

        await until(every_replica_serves_the_new_tool, 10, "every replica serves the new tool once Redis is back")
        for replica in cluster.replicas:
            assert (await health(replica.url))["trust"] == {"state": "ok"}
    async with client(cluster.url, "auto") as session:
        assert text_of(await session.call_tool(exposed, {})) == fresh
