"""Gateways sharing one real Redis (`nexus.cluster.redis_url`): approvals reach every replica within a second,
vectors are embedded once, trust fails closed while Redis is down or holds garbage, and everything comes back
when Redis does, without a restart. `tools/call` makes no Redis round trip."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server import MCPServer
from mcp.server.mcpserver import Context

from nexus_gateway.gateway import Gateway
from nexus_gateway.server.app import build_server
from nexus_gateway.state.redis_store import TICK, RedisStore
from tests.conftest import cli, make_config, text_of
from tests.fakes import in_process_upstreams
from tests.state.conftest import RedisServer

pytestmark = pytest.mark.anyio

ECHO = "changing__echo"


def changing_server() -> MCPServer:
    """An upstream whose `echo` can be redefined, and which can add a tool (`redefine`, `add`), telling the
    gateway its list changed."""
    server = MCPServer("changing")

    def echo(text: str) -> str:
        return text

    def fresh() -> str:
        return "fresh"

    server.add_tool(echo, name="echo", description="Return the text unchanged.")

    @server.tool()
    async def redefine(description: str, ctx: Context) -> str:
        """Give echo a new description."""
        server.remove_tool("echo")
        server.add_tool(echo, name="echo", description=description)
        await ctx.session.send_tool_list_changed()
        return "redefined"

    @server.tool()
    async def add(ctx: Context) -> str:
        """Add the tool `fresh`."""
        server.add_tool(fresh, name="fresh", description="A tool added later.")
        await ctx.session.send_tool_list_changed()
        return "added"

    return server


@asynccontextmanager
async def replica(
    folder: Path, redis: RedisServer, example_writer: Any = None, **nexus: Any
) -> AsyncIterator[tuple[Gateway, Client]]:
    """A gateway with its own state dir and its own in-process upstream, sharing `redis`."""
    folder.mkdir(exist_ok=True)
    entries, transports = in_process_upstreams({"changing": changing_server()})
    nexus.setdefault("mode", "passthrough")
    config = make_config(folder, entries, cluster={"redis_url": redis.url, "timeout": 0.5}, **nexus)
    async with Gateway(config, transports=transports, example_writer=example_writer) as gateway:
        with anyio.fail_after(10):
            await gateway.wait_ready()
        async with Client(build_server(gateway), mode="legacy", cache=None) as client:  # type: ignore[arg-type]
            yield gateway, client


async def described(client: Client, name: str = ECHO) -> str | None:
    """The description the gateway serves for `name` (None: not served)."""
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    return tools[name].description if name in tools else None


async def until(condition: Any, seconds: float = 10.0, what: str = "") -> None:
    with anyio.fail_after(seconds):
        while not await condition():
            await anyio.sleep(0.02)


async def test_an_approval_on_one_replica_is_what_every_replica_serves_within_a_second(
    tmp_path: Path, redis_server: RedisServer
):
    async with AsyncExitStack() as stack:
        a, client_a = await stack.enter_async_context(replica(tmp_path / "a", redis_server))
        b, client_b = await stack.enter_async_context(replica(tmp_path / "b", redis_server))
        assert await described(client_b) == "Return the text unchanged."
        for client in (client_a, client_b):  # the upstreams of both replicas change the tool alike
            assert text_of(await client.call_tool("changing__redefine", {"description": "Echo, v2."})) == "redefined"

        async def both_quarantined() -> bool:
            return all(any(q["name"] == ECHO for q in gw.quarantined()) for gw in (a, b))

        await until(both_quarantined)
        assert await described(client_a) == await described(client_b) == "Return the text unchanged."  # pinned
        [pending] = a.catalog.pins.quarantined()
        a.catalog.pins.approve(reviewed={ECHO: pending.hash})
        approved_at = time.monotonic()

        async def b_serves_the_approved_definition() -> bool:
            return await described(client_b) == "Echo, v2."

        await until(b_serves_the_approved_definition, 5)
        took = time.monotonic() - approved_at
        assert took < 1.0, f"the approval reached the other replica after {took:.2f}s"
        await until(lambda: _serves(client_a, "Echo, v2."), 1)
        assert b.trust() == {"state": "ok"} and b.store_status()["state"] == "ok"


async def _serves(client: Client, description: str) -> bool:
    return await described(client) == description


async def test_a_replica_takes_the_vectors_another_embedded_and_embeds_none(tmp_path: Path, redis_server: RedisServer):
    nexus = {"mode": "routed", "embedder": "hashing", "run": False}
    async with replica(tmp_path / "a", redis_server, **nexus) as (a, _):
        await until(lambda: _indexed(a))
        first = a.retriever.built.embedded  # type: ignore[attr-defined]
        assert first > 0
    async with replica(tmp_path / "b", redis_server, **nexus) as (b, client_b):
        await until(lambda: _indexed(b))
        assert b.retriever.built.embedded == 0  # type: ignore[attr-defined]
        found = await client_b.call_tool("search_tools", {"query": "give echo a new description", "k": 1})
        assert found.structured_content["tools"][0]["name"] == "changing__redefine"


async def _indexed(gateway: Gateway) -> bool:
    return gateway.indexer.current and gateway.indexer.searchable > 0


async def test_while_redis_is_down_nothing_unapproved_is_served_and_it_all_comes_back_without_a_restart(
    tmp_path: Path, redis_server: RedisServer
):
    async with replica(tmp_path / "a", redis_server) as (a, client):
        assert a.store_status()["state"] == "ok"
        redis_server.stop()

        async def degraded() -> bool:
            return a.store_status()["state"] == "degraded" and a.trust()["state"] == "degraded"

        await until(degraded, 5)
        assert "redis" in (a.store_status()["last_error"] or "").lower() or a.store_status()["last_error"]
        # approved before: still served
        assert text_of(await client.call_tool(ECHO, {"text": "still here"})) == "still here"
        # a tool never approved, and a changed definition, are not served while approvals cannot be confirmed
        assert text_of(await client.call_tool("changing__add", {})) == "added"
        assert text_of(await client.call_tool("changing__redefine", {"description": "Echo, v3."})) == "redefined"

        async def judged() -> bool:
            return {q["name"] for q in a.quarantined()} >= {"changing__fresh", ECHO}

        await until(judged)
        assert await described(client, "changing__fresh") is None
        refused = await client.call_tool("changing__fresh", {})
        assert refused.is_error and "quarantined" in text_of(refused)
        assert await described(client) == "Return the text unchanged."
        with pytest.raises(Exception, match="nothing was approved"):
            a.catalog.pins.approve(every=True)

        redis_server.start()  # empty: it kept nothing

        async def back() -> bool:
            return a.store_status()["state"] == "ok"

        await until(back, 10)
        # Redis came back empty: this replica's copy is written back; trust stays degraded until a person approves,
        # and what was never approved is still withheld
        await until(lambda: _in_redis(redis_server), 5)
        assert a.trust()["state"] == "degraded" and "empty" in a.trust()["why"]
        assert await described(client, "changing__fresh") is None
        assert text_of(await client.call_tool(ECHO, {"text": "after"})) == "after"
        approved = a.catalog.pins.approve(every=True)  # writes work again: a person ends it
        assert {q.name for q in approved} == {"changing__fresh", ECHO}
        await until(lambda: _serves(client, "Echo, v3."), 2)
        assert await described(client, "changing__fresh") == "A tool added later."
        assert a.trust() == {"state": "ok"}


async def _in_redis(redis_server: RedisServer) -> bool:
    return bool(redis_server.client().hgetall("nexus:pins"))


async def test_garbage_in_the_pin_store_fails_closed_with_a_clear_log(
    tmp_path: Path, redis_server: RedisServer, caplog: pytest.LogCaptureFixture
):
    redis_server.client().hset("nexus:pins", "changing", "{not json")
    caplog.set_level(logging.ERROR)
    async with replica(tmp_path / "a", redis_server) as (a, client):
        assert await described(client) is None  # no approval could be read for it: withheld
        assert {q["name"]: q["reason"] for q in a.quarantined()}[ECHO] == "lost"
        trust = a.trust()
        assert trust["state"] == "degraded" and "nexus:pins" in trust["why"]
        assert "Redis key nexus:pins field 'changing' is not JSON" in caplog.text
        assert a.store_status()["state"] == "ok"  # Redis answers; what it holds is what is wrong
        # every replica learns of the damage: the recovery note is in Redis
        assert redis_server.client().get("nexus:pins:meta") is not None
        # a person's approval ends it, for every replica
        pending = {q.name: q.hash for q in a.catalog.pins.quarantined()}
        assert ECHO in pending
        a.catalog.pins.approve(reviewed=pending)
        await until(lambda: _serves(client, "Return the text unchanged."), 2)
        assert a.trust() == {"state": "ok"} and redis_server.client().get("nexus:pins:meta") is None


async def test_a_wrong_type_key_is_a_degraded_store_and_nothing_is_pinned_afresh(
    tmp_path: Path, redis_server: RedisServer
):
    redis_server.client().set("nexus:pins", "a string, not a hash")
    async with replica(tmp_path / "a", redis_server) as (a, client):
        assert await described(client) is None
        assert a.store_status()["state"] == "degraded" and "WRONGTYPE" in (a.store_status()["last_error"] or "")
        redis_server.client().delete("nexus:pins")  # repaired: the replica recovers by itself

        async def served() -> bool:
            return await described(client) == "Return the text unchanged."

        await until(served, 10)
        assert a.store_status()["state"] == "ok" and a.trust() == {"state": "ok"}


async def test_tools_call_makes_no_redis_round_trip(tmp_path: Path, redis_server: RedisServer):
    async with replica(tmp_path / "a", redis_server) as (a, client):
        store = a.store
        assert isinstance(store, RedisStore)
        await _started_up(store)  # on a loaded machine the subscription and snapshot may come after `ready`
        before, uses_before, started = store.round_trips, dict(store.link.by_use), time.monotonic()
        calls = 200
        for index in range(calls):
            assert text_of(await client.call_tool(ECHO, {"text": str(index)})) == str(index)
        elapsed = time.monotonic() - started
        ticks = store.link.by_use["activity"] - uses_before.get("activity", 0)
        uses = {use: n - uses_before.get(use, 0) for use, n in store.link.by_use.items()}
        assert store.round_trips - before == ticks, uses  # only the background flush, never a call
        assert ticks <= elapsed / TICK + 2
        # the calls every replica recorded are what the dashboard reads, bounded
        await until(lambda: _recorded(a, calls), 5)


async def _started_up(store: RedisStore) -> None:
    """Until the replica's start-up traffic with Redis is over (the subscription, the snapshot, the pins and start
    times written): two ticks with no round trip but the activity flush."""

    def others() -> int:
        return store.round_trips - store.link.by_use["activity"]

    last, since = others(), time.monotonic()
    with anyio.fail_after(20):
        while time.monotonic() - since < 2 * TICK or not store.link.by_use["snapshot"]:
            await anyio.sleep(TICK / 4)
            if others() != last:
                last, since = others(), time.monotonic()


async def _recorded(gateway: Gateway, calls: int) -> bool:
    entries = gateway.activity.calls()
    return len([entry for entry in entries if entry.tool == ECHO]) >= min(calls, 200)


async def test_a_replica_writes_no_usage_examples_another_replica_wrote(
    tmp_path: Path, redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
):
    from tests.test_indexing import FakeWriter, _examples_written

    monkeypatch.setenv("NEXUS_USAGE_EXAMPLES", "true")
    nexus = {"mode": "routed", "embedder": "hashing", "run": False}
    first, second = FakeWriter(), FakeWriter()
    async with replica(tmp_path / "a", redis_server, example_writer=first.open, **nexus) as (a, _):
        await _examples_written(a)
        assert sorted(first.asked) == sorted(record.name for record in a.catalog)

        async def shared() -> bool:
            return len(redis_server.client().hkeys("nexus:examples")) == len(first.asked)

        await until(shared, 5)
    async with replica(tmp_path / "b", redis_server, example_writer=second.open, **nexus) as (b, _):
        assert await _examples_written(b) == {"done": len(b.catalog), "total": len(b.catalog), "writing": False}
        assert second.asked == []
        assert (await b.search("zzqx redefine please", 1))[0].name == "changing__redefine"


async def test_tools_approve_on_the_command_line_reaches_a_running_replica(tmp_path: Path, redis_server: RedisServer):
    async with replica(tmp_path / "a", redis_server) as (a, client):
        assert text_of(await client.call_tool("changing__redefine", {"description": "Echo, v4."})) == "redefined"

        async def quarantined() -> bool:
            return any(q["name"] == ECHO for q in a.quarantined())

        await until(quarantined)
        [pending] = a.catalog.pins.quarantined()
        config = str(tmp_path / "a" / "gateway.json")
        listed = await anyio.to_thread.run_sync(lambda: cli("tools", "diff", "--json", "-c", config))
        assert listed.returncode == 0, listed.stderr
        assert [entry["hash"] for entry in json.loads(listed.stdout)] == [pending.hash]
        done = await anyio.to_thread.run_sync(
            lambda: cli("tools", "approve", ECHO, "--hash", pending.hash, "-c", config)
        )
        assert done.returncode == 0, done.stderr
        await until(lambda: _serves(client, "Echo, v4."), 2)


def test_tools_approve_says_so_when_redis_does_not_answer(tmp_path: Path):
    from tests.conftest import free_port, write_config

    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    config = write_config(tmp_path, {}, cluster={"redis_url": url, "timeout": 0.2})
    result = cli("tools", "approve", "x__y", "--hash", "0" * 16, "-c", str(config))
    assert result.returncode == 2
    assert "reading the pin store" in result.stderr and "Connection" in result.stderr


async def test_a_replica_started_while_redis_is_down_serves_nothing_unconfirmed_and_healthz_says_why(
    tmp_path: Path, redis_server: RedisServer
):
    import httpx

    from nexus_gateway.server.http import build_http_app

    redis_server.stop()
    async with replica(tmp_path / "a", redis_server) as (a, client):
        app = build_http_app(a)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
            health = (await http.get("/healthz")).json()
            assert health["store"]["backend"] == "redis" and health["store"]["state"] == "degraded"
            assert health["store"]["last_error"] and health["trust"]["state"] == "degraded"
            assert 'nexus_store_up{backend="redis"} 0' in (await http.get("/metrics")).text
            assert await described(client) is None  # no approval could be confirmed: nothing is served

            redis_server.start()

            async def served() -> bool:
                return await described(client) == "Return the text unchanged."

            await until(served, 10)
            health = (await http.get("/healthz")).json()
            assert health["store"]["state"] == "ok" and health["trust"] == {"state": "ok"}
            metrics = (await http.get("/metrics")).text
            assert 'nexus_store_up{backend="redis"} 1' in metrics
            assert 'nexus_store_round_trips_total{use="pins"}' in metrics


async def test_the_file_store_is_the_default_and_reports_itself(tmp_path: Path):
    from tests.fakes import fake_gateway, faulty_server

    async with fake_gateway(tmp_path, {"one": faulty_server()}) as (gateway, _):
        assert gateway.store.backend == "files" and gateway.store_status() == {"backend": "files", "state": "ok"}
        assert gateway.catalog.pins.path == tmp_path / "state" / "pins.json"


async def test_shared_vectors_of_the_wrong_size_are_embedded_again_with_a_warning(
    tmp_path: Path, redis_server: RedisServer, caplog: pytest.LogCaptureFixture
):
    nexus = {"mode": "routed", "embedder": "hashing", "run": False}
    async with replica(tmp_path / "a", redis_server, **nexus) as (a, _):
        await until(lambda: _indexed(a))
    shared = redis_server.client()
    [key] = shared.keys("nexus:vectors:*")
    digests = shared.hkeys(key)
    shared.hset(key, mapping=dict.fromkeys(digests, b"garbage"))
    async with replica(tmp_path / "b", redis_server, **nexus) as (b, client_b):
        await until(lambda: _indexed(b))
        assert b.retriever.built.embedded == len(digests)  # type: ignore[attr-defined]
        found = await client_b.call_tool("search_tools", {"query": "give echo a new description", "k": 1})
        assert found.structured_content["tools"][0]["name"] == "changing__redefine"
    assert "has 7 bytes" in caplog.text
    assert all(len(value) > 7 for value in shared.hvals(key))  # written again, sound


async def test_every_replica_shows_the_calls_another_replica_made(tmp_path: Path, redis_server: RedisServer):
    async with AsyncExitStack() as stack:
        a, client_a = await stack.enter_async_context(replica(tmp_path / "a", redis_server))
        b, _ = await stack.enter_async_context(replica(tmp_path / "b", redis_server))
        for index in range(3):
            assert text_of(await client_a.call_tool(ECHO, {"text": f"from a {index}"})) == f"from a {index}"
        assert not [entry for entry in b.activity.calls() if entry.tool == ECHO]

        async def b_shows_them() -> bool:
            return len([entry for entry in b.activity.calls() if entry.tool == ECHO]) == 3

        await until(b_shows_them, 5)
        assert len(a.activity.calls()) == len(b.activity.calls())


async def test_after_redis_restarts_empty_no_replica_serves_a_tool_never_approved_until_a_person_approves(
    tmp_path: Path, redis_server: RedisServer
):
    fresh = "changing__fresh"
    async with AsyncExitStack() as stack:
        replicas = [await stack.enter_async_context(replica(tmp_path / name, redis_server)) for name in "abc"]
        redis_server.stop()

        async def all_degraded() -> bool:
            return all(gw.store_status()["state"] == "degraded" for gw, _ in replicas)

        await until(all_degraded, 5)
        for _, client in replicas:  # every replica's upstream adds a tool no one approved
            assert text_of(await client.call_tool("changing__add", {})) == "added"

        async def all_withhold_it() -> bool:
            return all(any(q["name"] == fresh for q in gw.quarantined()) for gw, _ in replicas)

        await until(all_withhold_it)
        redis_server.start()  # empty: it kept nothing

        async def decided(gateway: Gateway, client: Client) -> bool:
            if gateway.store_status()["state"] != "ok":
                return False
            return gateway.trust()["state"] == "degraded" or await described(client, fresh) is not None

        async def all_decided() -> bool:
            return all([await decided(gw, client) for gw, client in replicas])

        await until(all_decided, 10)
        watched_until = time.monotonic() + 3 * TICK  # and it stays so while the replicas follow the store
        while True:
            for gateway, client in replicas:
                assert await described(client, fresh) is None, "a replica serves a tool no one approved"
                refused = await client.call_tool(fresh, {})
                assert refused.is_error and "quarantined" in text_of(refused)
                trust = gateway.trust()
                assert trust["state"] == "degraded" and "empty" in trust["why"], trust
            if time.monotonic() >= watched_until:
                break
            await anyio.sleep(0.05)
        assert redis_server.client().get("nexus:pins:meta") is not None  # the flag every replica honours

        (a, _), _, (_, client_c) = replicas
        approved = a.catalog.pins.approve(every=True)  # a person ends it, through one replica
        approved_at = time.monotonic()
        assert fresh in {q.name for q in approved}

        async def all_serve_it() -> bool:
            return all([await described(client, fresh) == "A tool added later." for _, client in replicas])

        await until(all_serve_it, 5)
        took = time.monotonic() - approved_at
        assert took < 1.0, f"the approval reached every replica after {took:.2f}s"
        assert all(gw.trust() == {"state": "ok"} for gw, _ in replicas)
        assert text_of(await client_c.call_tool(fresh, {})) == "fresh"


async def test_a_flushall_under_live_connections_is_noticed_and_every_replica_fails_closed(
    tmp_path: Path, redis_server: RedisServer
):
    fresh = "changing__fresh"
    async with AsyncExitStack() as stack:
        a, client_a = await stack.enter_async_context(replica(tmp_path / "a", redis_server))
        b, client_b = await stack.enter_async_context(replica(tmp_path / "b", redis_server))
        assert redis_server.client().get("nexus:pins:epoch") is not None
        redis_server.client().flushall()  # no connection drops: only the epoch tells

        async def both_degraded() -> bool:
            return all(gw.trust()["state"] == "degraded" for gw in (a, b)) and bool(
                redis_server.client().get("nexus:pins:meta")
            )

        await until(both_degraded, 5)
        assert all(gw.store_status()["state"] == "ok" for gw in (a, b))
        assert await described(client_a) == await described(client_b) == "Return the text unchanged."
        for client in (client_a, client_b):
            assert text_of(await client.call_tool("changing__add", {})) == "added"

        async def both_withhold_it() -> bool:
            return all(any(q["name"] == fresh for q in gw.quarantined()) for gw in (a, b))

        await until(both_withhold_it)
        assert await described(client_a, fresh) is None and await described(client_b, fresh) is None
        b.catalog.pins.approve(every=True)

        async def both_serve_it() -> bool:
            return all([await described(client, fresh) == "A tool added later." for client in (client_a, client_b)])

        await until(both_serve_it, 1)
        assert a.trust() == b.trust() == {"state": "ok"}
