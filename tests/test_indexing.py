"""Indexing runs beside serving: a slow embedder never times out an upstream, and search answers meanwhile."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import numpy as np
import pytest
from mcp import Client

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.gateway import Gateway
from nexus_gateway.generation.examples import Written
from nexus_gateway.routing import hybrid
from nexus_gateway.routing.embedders import make_embedder
from nexus_gateway.routing.hybrid import HybridRetriever
from nexus_gateway.server.app import build_server
from nexus_gateway.upstreams.pool import UpstreamState
from tests.conftest import faulty, library, make_config, text_of

pytestmark = pytest.mark.anyio


class HeldEmbedder:
    """The hashing embedder, but tool batches (more than one text) after the first `free` wait for `release`:
    an embedding model as slow as the test wants. Query embeddings (one text) are never held."""

    def __init__(self, free: int = 0) -> None:
        self.inner = make_embedder("hashing")
        self.name, self.dim = self.inner.name, self.inner.dim
        self.free = free
        self.release = threading.Event()
        self.held = threading.Event()

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) > 1:
            if self.free:
                self.free -= 1
            else:
                self.held.set()
                self.release.wait(90)
        return self.inner.embed_batch(texts)


async def _search(client: Client, query: str) -> tuple[str, dict]:  # type: ignore[type-arg]
    result = await client.call_tool("search_tools", {"query": query, "k": 2})
    return text_of(result), result.structured_content or {}


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_a_slow_embedder_does_not_time_out_an_upstream_and_search_answers_while_it_indexes(
    tmp_path: Path, era: str
):
    embedder = HeldEmbedder()
    # The embedder is held far longer than the start_timeout (until released, or 90 s).
    config = make_config(tmp_path, {"one": faulty(start_timeout=30)}, mode="routed")
    gateway = Gateway(config, retriever=HybridRetriever(embedder))
    try:
        async with gateway, Client(build_server(gateway), mode=era, cache=None) as client:  # type: ignore[arg-type]
            with anyio.fail_after(60):  # before the fix, the upstream's start waited for the embedder, then timed out
                await gateway.wait_ready()
            one = gateway.pool.get("one")
            assert one is not None and one.state is UpstreamState.HEALTHY and one.restarts == 0
            assert await anyio.to_thread.run_sync(embedder.held.wait, 10)  # indexing is under way, and held
            with anyio.fail_after(1):  # tools/list does not wait for the index
                assert (await client.list_tools()).tools[0].name == "search_tools"
            with anyio.fail_after(5):
                text, structured = await _search(client, "echo the text back")
            assert "0 of 4 tools indexed so far" in text and (structured["indexed"], structured["total"]) == (0, 4)
            called = await client.call_tool("call_tool", {"name": "one__echo", "arguments": {"text": "meanwhile"}})
            assert text_of(called) == "meanwhile"
            assert one.state is UpstreamState.HEALTHY and one.restarts == 0
            embedder.release.set()
            with anyio.fail_after(10):
                while not gateway.indexer.current:
                    await anyio.sleep(0.02)
            text, structured = await _search(client, "echo the text back")
            assert text.startswith("one__echo(") and "indexed so far" not in text and "indexed" not in structured
    finally:
        embedder.release.set()


async def test_search_finds_the_tools_indexed_so_far_and_the_log_shows_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    caplog.set_level("INFO", logger="nexus_gateway")
    monkeypatch.setattr(hybrid, "INDEX_BATCH", 2)  # four tools: two batches, the second held
    embedder = HeldEmbedder(free=1)
    config = make_config(tmp_path, {"one": faulty()}, mode="routed", start_timeout=60)
    gateway = Gateway(config, retriever=HybridRetriever(embedder))
    try:
        async with gateway, Client(build_server(gateway), mode="legacy", cache=None) as client:
            await gateway.wait_ready()
            assert await anyio.to_thread.run_sync(embedder.held.wait, 10)
            with anyio.fail_after(5):
                text, structured = await _search(client, "echo the text back unchanged")
            # The first batch (echo, grow: names in order) is searchable; the held one (pid, sleep) is not yet.
            assert "2 of 4 tools indexed so far" in text
            assert structured["tools"][0]["name"] == "one__echo"
            assert (structured["indexed"], structured["total"]) == (2, 4)
            assert "one__sleep" not in {tool["name"] for tool in structured["tools"]}
            assert "index: indexed 2 of 4 tools" in caplog.text
            embedder.release.set()
            with anyio.fail_after(10):
                while not gateway.indexer.current:
                    await anyio.sleep(0.02)
            _, structured = await _search(client, "sleep for some seconds")
            assert structured["tools"][0]["name"] == "one__sleep"
            assert "index: 4 tools searchable" in caplog.text
    finally:
        embedder.release.set()


async def test_routed_indexing_waits_until_every_upstream_has_started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Embedding a large catalog takes a core for minutes, and loading the embedder holds the interpreter: while
    an upstream is still starting, neither happens (the tools of those already started are not embedded yet),
    even once it is late (past its start_timeout: tools/list no longer waits for it); once every upstream has
    started, the index covers them all."""
    slow = library("--start-delay", "4", start_timeout=3)  # late at 3 s, abandoned only at 12 s
    servers = {"fast": faulty(start_timeout=60), "slow": slow}
    config = make_config(tmp_path, servers, mode="routed", embedder="hashing")
    async with Gateway(config) as gateway:
        asked: list[dict[str, UpstreamState]] = []
        request = gateway.indexer.request

        def recorded() -> None:
            asked.append({upstream.name: upstream.state for upstream in gateway.pool.upstreams.values()})
            request()

        monkeypatch.setattr(gateway.indexer, "request", recorded)
        fast, slow = gateway.pool.get("fast"), gateway.pool.get("slow")
        assert fast is not None and slow is not None
        with anyio.fail_after(30):
            while fast.state is not UpstreamState.HEALTHY:
                await anyio.sleep(0.02)
        assert "fast__echo" in gateway.catalog and slow.state is not UpstreamState.HEALTHY
        assert gateway.index_status() == {"loaded": False, "searchable": 0, "current": False, "usage_examples": None}
        await gateway.wait_ready()
        with anyio.fail_after(30):
            while not gateway.indexer.current or slow.state is not UpstreamState.HEALTHY:
                await anyio.sleep(0.02)
        assert slow.restarts == 0 and "slow__echo" in gateway.catalog
        assert gateway.index_status() == {
            "loaded": True,
            "searchable": len(gateway.catalog),
            "current": True,
            "usage_examples": None,  # off in tests (conftest)
        }
        healthy = {"fast": UpstreamState.HEALTHY, "slow": UpstreamState.HEALTHY}
        assert asked and all(states == healthy for states in asked)


class FakeWriter:
    """Writes one made-up request per tool (`zzqx <tool> request`), as the local model would write some."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def write(self, records: Sequence[ToolRecord], done: Callable[[Written], None]) -> None:
        for record in records:
            self.asked.append(record.name)
            done(Written(record.content_hash, (f"zzqx {record.upstream_name} please",), "fake-model", 3, 0.0))

    @asynccontextmanager
    async def open(self) -> AsyncIterator[FakeWriter]:
        yield self


async def _examples_written(gateway: Gateway) -> dict[str, object]:
    assert gateway.examples is not None
    with anyio.fail_after(30):
        while True:
            status = gateway.examples.status()
            finished = status["total"] and status["done"] == status["total"] and not status["writing"]
            if finished and gateway.indexer.current:
                return status
            await anyio.sleep(0.02)


async def test_usage_examples_are_written_in_the_background_indexed_and_reused_after_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    caplog.set_level("INFO", logger="nexus_gateway")
    monkeypatch.setenv("NEXUS_USAGE_EXAMPLES", "true")
    state = tmp_path / "state"
    config = make_config(tmp_path, {"one": faulty()}, mode="routed", embedder="hashing", state_dir=str(state))
    writer = FakeWriter()
    async with Gateway(config, example_writer=writer.open) as gateway:
        status = await _examples_written(gateway)
        assert status == {"done": len(gateway.catalog), "total": len(gateway.catalog), "writing": False}
        assert gateway.index_status()["usage_examples"] == status
        found = await gateway.search("zzqx sleep please", 1)
        assert found[0].name == "one__sleep"  # found by its example request
        assert sorted(writer.asked) == sorted(record.name for record in gateway.catalog)
    assert "usage examples: 4 of 4 tools" in caplog.text
    saved = json.loads((state / "usage_examples.json").read_text())
    assert {entry["model"] for entry in saved["tools"].values()} == {"fake-model"}

    again = FakeWriter()
    async with Gateway(config, example_writer=again.open) as gateway:
        await gateway.wait_warm()
        assert await _examples_written(gateway) == status
        assert (await gateway.search("zzqx sleep please", 1))[0].name == "one__sleep"
    assert again.asked == []  # every definition already had its examples


async def test_usage_examples_are_off_when_the_setting_says_so(tmp_path: Path):
    config = make_config(tmp_path, {"one": faulty()}, mode="routed", embedder="hashing", state_dir=str(tmp_path))
    writer = FakeWriter()
    async with Gateway(config, example_writer=writer.open) as gateway:
        assert gateway.examples is None and gateway.index_status()["usage_examples"] is None
