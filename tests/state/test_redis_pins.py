"""The pin store in Redis without a gateway: two replicas' stores writing at once never lose an approval or pin
a definition the other already judged differently (compare-and-set), and an approval names what was reviewed."""

from __future__ import annotations

from typing import Any

import pytest

from nexus_gateway.catalog.pins import PinStore
from nexus_gateway.errors import NexusError
from nexus_gateway.state.redis_store import RedisStore
from tests.state.conftest import RedisServer


def tool(description: str) -> dict[str, Any]:
    return {"name": "echo", "description": description, "inputSchema": {"type": "object"}}


def replica_pins(redis_server: RedisServer, tmp_path: Any) -> PinStore:
    """A replica's pin store read once, with no listener: its mirror goes stale unless it writes."""
    store = RedisStore(redis_server.url, tmp_path, timeout=2)
    pins = store.shared_pins()
    pins.load_now()
    return pins


def test_a_stale_replica_that_writes_second_judges_again_from_what_the_first_wrote(
    redis_server: RedisServer, tmp_path: Any
):
    a, b = replica_pins(redis_server, tmp_path), replica_pins(redis_server, tmp_path)
    [seen_by_a] = a.observe_server("s", [("s__echo", tool("v1"))])
    assert seen_by_a.quarantine is None  # first seen: pinned
    [seen_by_b] = b.observe_server("s", [("s__echo", tool("v2"))])  # b never heard of a's pin
    assert seen_by_b.quarantine is not None and seen_by_b.quarantine.reason == "changed"
    assert seen_by_b.shown is not None and seen_by_b.shown["description"] == "v1"  # the pinned one is served


def test_an_approval_on_a_stale_replica_is_not_lost_and_is_refused_for_another_definition(
    redis_server: RedisServer, tmp_path: Any
):
    a, b = replica_pins(redis_server, tmp_path), replica_pins(redis_server, tmp_path)
    a.observe_server("s", [("s__echo", tool("v1"))])
    a.observe_server("s", [("s__echo", tool("v2"))])
    [pending] = a.quarantined()
    [approved] = a.approve(reviewed={"s__echo": pending.hash})
    assert approved.current["description"] == "v2"
    # b held nothing; it sees v2 listed and takes a's approval when its write is refused
    [seen] = b.observe_server("s", [("s__echo", tool("v2"))])
    assert seen.quarantine is None and seen.shown is not None and seen.shown["description"] == "v2"
    # a change since the review is refused with the new diff, and nothing is approved
    b.observe_server("s", [("s__echo", tool("v3"))])
    with pytest.raises(NexusError, match="changed since it was reviewed"):
        b.approve(reviewed={"s__echo": pending.hash})
    fresh = replica_pins(redis_server, tmp_path)
    assert [q.current["description"] for q in fresh.quarantined()] == ["v3"]


def test_replicas_that_read_back_another_replicas_restored_copy_stay_degraded_until_a_person_approves(
    redis_server: RedisServer, tmp_path: Any
):
    from nexus_gateway.state._link import StoreUnavailable

    listing = [("s__echo", tool("v1")), ("s__fresh", {**tool("a tool added later"), "name": "fresh"})]
    a, b, c = (replica_pins(redis_server, tmp_path) for _ in range(3))
    a.observe_server("s", listing[:1])
    for other in (b, c):
        other.load_now()  # all three hold the approval of echo
    redis_server.stop()
    for pins in (a, b, c):
        with pytest.raises(StoreUnavailable):
            pins.load_now()
        [_, fresh] = pins.observe_server("s", listing)  # unconfirmed: the new tool is withheld
        assert fresh.quarantine is not None
    redis_server.start()  # empty: it kept nothing
    a.load_now()  # a finds it empty first and writes its copy back
    [_, fresh] = a.observe_server("s", listing)
    assert fresh.quarantine is not None and a.trust.state == "degraded"
    assert redis_server.client().hgetall("nexus:pins")  # a's copy is there: the others read it, not emptiness
    for pins in (b, c):
        pins.load_now()
        [echo, fresh] = pins.observe_server("s", listing)
        assert echo.quarantine is None  # approved before: still served
        assert fresh.quarantine is not None, "a replica pinned a tool no one approved"
        assert pins.trust.state == "degraded" and "empty" in (pins.trust.why or "")
    assert {q.name for q in a.approve(every=True)} == {"s__fresh"}  # a person ends it, through one replica
    for pins in (a, b, c):
        pins.load_now()
        [_, fresh] = pins.observe_server("s", listing)
        assert fresh.quarantine is None and pins.trust.state == "ok"
