"""Background indexing: the catalog is embedded off every request path and off every upstream's start.

Each listing marks the index stale; the gateway then asks for a run (at once in routed mode, on the first
search in passthrough). One task does the runs, one at a time, each over the catalog as it is when the run
starts, so the listings that arrive during a run share the next one (at start-up, dozens of upstreams cost
two or three runs, not one each). A run publishes the index as it grows (the retriever reports after each
batch it embeds), so a search during a cold start answers from the tools indexed so far, and the log shows
`indexed k of n`. Embedding never counts against an upstream's `start_timeout`, and `wait_ready` never waits
for it.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence

import anyio
import anyio.abc
import anyio.from_thread
import anyio.to_thread

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.routing.retriever import Retriever

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
        finally:
            self._finished = max(self._finished, target)
            self._run_ended.set()
            self._run_ended = anyio.Event()
