"""Background indexing: the catalog is embedded off every request path and off every upstream's start.

Each listing marks the index stale; the gateway then asks for a run (at once in routed mode, on the first
search in passthrough). One task does the runs, one at a time, each over the catalog as it is when the run
starts, so the listings that arrive during a run share the next one (at start-up, dozens of upstreams cost
two or three runs, not one each). A run publishes the index as it grows (the retriever reports after each
batch it embeds), so a search during a cold start answers from the tools indexed so far, and the log shows
`indexed k of n`. Embedding never counts against an upstream's `start_timeout`, and `wait_ready` never waits
for it.

`UsageExamples` writes a few example requests for each tool with the local model, in the background after a
run, and hands them to the retriever as they come (routing/usage.py indexes them beside the descriptions); the
next run embeds them. Importing this module loads neither the model nor the generation layer.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Protocol

import anyio
import anyio.abc
import anyio.from_thread
import anyio.to_thread

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.config import GatewayConfig
from nexus_gateway.routing.retriever import Retriever, TakesExamples
from nexus_gateway.state import Blobs

logger = logging.getLogger(__name__)


class BackgroundIndexer:
    """Keeps `retriever` indexed over `records()`, in a task started by `run`."""

    def __init__(self, retriever: Retriever, records: Callable[[], Sequence[ToolRecord]]) -> None:
        self._retriever = retriever
        self._records = records
        self._version = 0
        """Catalog changes seen so far."""
        self._indexed = 0
        """The catalog version the last successful run indexed."""
        self._finished = 0
        """The catalog version the last run (successful or not) was over."""
        self.searchable = 0
        """How many tools the published index holds (grows during a run)."""
        self._wake = anyio.Event()
        self._run_ended = anyio.Event()
        self.on_indexed: Callable[[], None] | None = None
        """Told after each successful run (usage examples look for tools without any)."""

    @property
    def current(self) -> bool:
        """Whether the index covers every catalog change so far."""
        return self._indexed >= self._version

    def mark_stale(self) -> None:
        """The catalog changed; the next run indexes it."""
        self._version += 1

    def request(self) -> None:
        """Index the catalog as it is now, in the background (coalesced with a run already asked for)."""
        if self._finished < self._version:
            self._wake.set()

    async def settle(self, timeout: float) -> None:
        """Ask for a run if the index is stale, and wait at most `timeout` for it (a search then answers from
        what is indexed, whether or not the run has finished)."""
        target = self._version
        self.request()
        with anyio.move_on_after(timeout):
            while self._finished < target:
                await self._run_ended.wait()

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """The indexing task: runs until cancelled."""
        task_status.started()
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            if self._finished < self._version:
                await self._index_once()

    async def _index_once(self) -> None:
        target = self._version
        records = list(self._records())
        started = time.monotonic()
        last_log = -math.inf

        def progress(searchable: int, total: int) -> None:  # called in the worker thread
            nonlocal last_log
            self.searchable = searchable
            if searchable < total and time.monotonic() - last_log >= 1.0:
                last_log = time.monotonic()
                logger.info("index: indexed %d of %d tools", searchable, total)
            anyio.from_thread.check_cancelled()  # the gateway is closing: stop between batches

        try:
            await anyio.to_thread.run_sync(self._retriever.index, records, progress)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception:  # boundary: a failed index run never stops the gateway; searches use the last one
            logger.exception("indexing %d tools failed; searches use the previous index until a change", len(records))
        else:
            self._indexed = target
            self.searchable = len(records)
            logger.info("index: %d tools searchable (%.1fs)", len(records), time.monotonic() - started)
            if self.on_indexed is not None:
                self.on_indexed()
        finally:
            self._finished = max(self._finished, target)
            self._run_ended.set()
            self._run_ended = anyio.Event()


class ExampleWriter(Protocol):
    """What writes tools' usage examples (generation/examples.py's `ModelExampleWriter`, a fake in tests)."""

    async def write(self, records: Sequence[ToolRecord], done: Callable[[Any], None]) -> None:
        """Write every tool's examples; `done(written)` with each (`.content_hash`, `.examples`, `.model`)."""
        ...


OpenWriter = Callable[[], AbstractAsyncContextManager[ExampleWriter]]
"""Opens a writer (and the model behind it) for one round of writing; closed when the round ends."""

PUBLISH_EVERY = 16
"""Examples of this many tools are handed to the index at once (or fewer when a round ends)."""


class UsageExamples:
    """Tools' usage examples: written in the background for every tool the catalog has none for, kept in an
    `ExampleCache` (the state dir's `usage_examples.json`, shared by every session and restart), and handed
    to the retriever (`TakesExamples.use_examples`), which indexes them beside the descriptions on its next
    run. Searches never wait for them: a tool without examples yet is found by its description.

    A round starts after an index run that left tools without examples; it opens a writer (the local model:
    one engine thread at low priority) and closes it when the round is over, so the model is loaded only
    while there is something to write. Progress: `status()` (for /healthz) and the log."""

    def __init__(
        self,
        retriever: TakesExamples,
        indexer: BackgroundIndexer,
        records: Callable[[], Sequence[ToolRecord]],
        cache_path: Path | None,
        open_writer: OpenWriter,
        *,
        active: Callable[[], bool] = lambda: True,
        shared: Blobs | None = None,
    ) -> None:
        """`shared`: examples other replicas wrote, by tool content hash (the store's `examples` blobs)."""
        from nexus_gateway.generation.example_cache import ExampleCache  # plain JSON: no model is loaded

        self._retriever = retriever
        self._indexer = indexer
        self._records = records
        self._open_writer = open_writer
        self._active = active
        self.cache = ExampleCache(cache_path, shared=shared)
        self._unshared: list[str] = []
        self._share_wake = anyio.Event()
        self.done = 0
        """Tools of the catalog that have examples."""
        self.total = 0
        """Distinct tool definitions in the catalog."""
        self.writing = False
        self._wake = anyio.Event()
        if len(self.cache):
            retriever.use_examples(self.cache.examples())  # a restart indexes what earlier runs wrote
        indexer.on_indexed = self.request

    def status(self) -> dict[str, Any]:
        return {"done": self.done, "total": self.total, "writing": self.writing}

    def request(self) -> None:
        """Look for tools without examples (after the catalog was indexed)."""
        self._wake.set()

    def _count(self, records: Sequence[ToolRecord]) -> list[ToolRecord]:
        """The tools without examples (one per definition), and the counts updated."""
        distinct = {record.content_hash: record for record in records}
        self.total = len(distinct)
        todo = [record for digest, record in distinct.items() if digest not in self.cache]
        self.done = self.total - len(todo)
        return todo

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """The writing task: runs until cancelled."""
        task_status.started()
        async with anyio.create_task_group() as tasks:
            if self.cache.shared is not None:
                tasks.start_soon(self._share, name="usage-examples-share")
            while True:
                await self._wake.wait()
                self._wake = anyio.Event()
                todo = self._count(self._records())
                if todo and self.cache.shared is not None:  # what other replicas wrote is not written again
                    digests = [record.content_hash for record in todo]
                    if await anyio.to_thread.run_sync(self.cache.pull, digests):
                        self._publish()
                        todo = self._count(self._records())
                if todo and self._active():
                    await self._write(todo)

    async def _share(self) -> None:
        """Hand what this replica wrote to the shared store, off the event loop."""
        while True:
            await self._share_wake.wait()
            self._share_wake = anyio.Event()
            digests, self._unshared = self._unshared, []
            await anyio.to_thread.run_sync(self.cache.push, digests)

    async def _write(self, todo: list[ToolRecord]) -> None:
        started, fresh = time.monotonic(), 0
        logger.info("usage examples: writing them for %d tools (%d of %d have some)", len(todo), self.done, self.total)

        def done(written: Any) -> None:
            nonlocal fresh
            self.cache.put(written.content_hash, written.examples, written.model)
            if self.cache.shared is not None:
                self._unshared.append(written.content_hash)
            self.done += 1
            fresh += 1
            if fresh >= PUBLISH_EVERY:
                fresh = 0
                self._publish()
                self._log(started)

        self.writing = True
        try:
            async with self._open_writer() as writer:
                await writer.write(todo, done)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception:  # boundary: examples are an extra; without them tools are found by their descriptions
            logger.exception("usage examples: writing failed; tools without examples are found by their descriptions")
        finally:
            self.writing = False
            if fresh:
                self._publish()
        self._log(started)

    def _log(self, started: float) -> None:
        logger.info("usage examples: %d of %d tools (%.0f s)", self.done, self.total, time.monotonic() - started)

    def _publish(self) -> None:
        """Save the cache and hand every example to the retriever; the next index run embeds the new ones."""
        self.cache.save()
        if self._unshared:
            self._share_wake.set()
        self._retriever.use_examples(self.cache.examples())
        self._indexer.mark_stale()
        self._indexer.request()


def local_writer(config: GatewayConfig) -> OpenWriter:
    """The local model as the writer (generation/examples.py), imported and loaded only when a round starts."""

    def open_writer() -> AbstractAsyncContextManager[ExampleWriter]:
        from nexus_gateway.generation.examples import local_writer as open_local

        return open_local(config)

    return open_writer
