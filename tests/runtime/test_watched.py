"""`WatchedTransport` on its own, over an in-memory transport: it tells when the connection has ended and
counts what is not JSON-RPC, while passing every item through."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from nexus_gateway.runtime._watched import WatchedTransport

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def memory_transport(
    incoming: anyio.abc.ObjectReceiveStream[Any],
) -> AsyncIterator[tuple[anyio.abc.ObjectReceiveStream[Any], anyio.abc.ObjectSendStream[Any]]]:
    """A client transport's pair of streams: what the server sent, and where the client writes."""
    to_server, _ = anyio.create_memory_object_stream[Any](10)
    async with incoming, to_server:
        yield incoming, to_server


async def test_the_end_of_the_read_stream_sets_closed_and_ends_iteration():
    send, receive = anyio.create_memory_object_stream[Any](10)
    watched = WatchedTransport(memory_transport(receive))
    with anyio.fail_after(5):
        async with watched as (read, _write):
            await send.send("first")
            await send.aclose()  # the upstream went away
            assert [item async for item in read] == ["first"]
            assert watched.closed.is_set()


async def test_the_closed_event_wakes_a_waiter_when_the_stream_ends():
    send, receive = anyio.create_memory_object_stream[Any](10)
    watched = WatchedTransport(memory_transport(receive))
    with anyio.fail_after(5):
        async with watched as (read, _write), anyio.create_task_group() as tg:

            async def drain() -> None:
                async for _ in read:
                    pass

            tg.start_soon(drain)
            assert not watched.closed.is_set()
            await send.aclose()
            await watched.closed.wait()


async def test_an_exception_passed_as_a_value_is_counted_and_still_delivered():
    send, receive = anyio.create_memory_object_stream[Any](10)
    garbage: list[Exception] = []
    watched = WatchedTransport(memory_transport(receive), on_garbage=garbage.append)
    bad = ValueError("not JSON-RPC: hello")
    with anyio.fail_after(5):
        async with watched as (read, _write):
            await send.send(bad)
            await send.send("message")
            assert await read.receive() is bad
            assert await read.receive() == "message"
            assert garbage == [bad] and not watched.closed.is_set()
            await send.aclose()


async def test_leaving_the_transport_or_closing_its_read_side_sets_closed():
    _, receive = anyio.create_memory_object_stream[Any](10)
    left = WatchedTransport(memory_transport(receive))
    async with left:
        assert not left.closed.is_set()
    assert left.closed.is_set()

    _, receive = anyio.create_memory_object_stream[Any](10)
    closed_read = WatchedTransport(memory_transport(receive))
    async with closed_read as (read, _write):
        await read.aclose()
        assert closed_read.closed.is_set()


async def test_writes_go_to_the_inner_transport_untouched():
    _, receive = anyio.create_memory_object_stream[Any](10)
    to_server, from_client = anyio.create_memory_object_stream[Any](10)

    @asynccontextmanager
    async def transport() -> AsyncIterator[tuple[Any, Any]]:
        yield receive, to_server

    async with WatchedTransport(transport()) as (_read, write):
        await write.send("request")
        assert from_client.receive_nowait() == "request"
