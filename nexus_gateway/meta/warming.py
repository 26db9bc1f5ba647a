"""`BlockWarmer`: the KV blocks `run` reads, compiled off the request path.

    engine started -> every catalog tool's scoring block (the re-ranker's: about 60 tokens a tool)
    after a run   -> the full-schema blocks of the tools it showed in their cold form (generator.pending)

With a tool's scoring block compiled, re-ranking it costs only the request's tokens; with its schema block
compiled, filling it splices the block instead of showing the signature (ArgumentGenerator's cold form).
One tool per engine job, and no job starts while a `run` is in progress (`busy`), so a request waits for
at most the one job under way. Progress: `status()` and the log.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import anyio

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.engine import Engine
from nexus_gateway.generation.generator import ArgumentGenerator

logger = logging.getLogger(__name__)

LOG_EVERY = 100
"""Scoring blocks between progress lines in the log."""


class BlockWarmer:
    """Made with the runner (so `busy` counts every run); compiles once `attach` gives it the engine (the
    runner starts `run` then, in the gateway's task group)."""

    def __init__(self, records: Callable[[], Sequence[ToolRecord]], *, scoring: bool = True) -> None:
        """`scoring`: compile every catalog tool's scoring block (`nexus.warm_blocks`); else only the schema
        blocks of the tools shown cold."""
        self._engine: Engine | None = None
        self._generator: ArgumentGenerator | None = None
        self._records = records
        self._scoring_on = scoring
        self._runs = 0
        self._quiet_since = 0.0
        """When the last run ended (`idle_for`)."""
        self._quiet = anyio.Event()
        self._quiet.set()
        self._wake = anyio.Event()
        self._warmed: set[str] = set()
        """Tool definitions (content hashes) whose scoring blocks are compiled."""
        self.scoring_total = 0
        self.schemas_compiled = 0
        self.working = False

    def attach(self, engine: Engine, generator: ArgumentGenerator) -> None:
        """The engine has started: compile with it (`run` then does the work)."""
        self._engine, self._generator = engine, generator
        self.wake()

    def detach(self) -> None:
        """The engine is closing: compile nothing more with it."""
        self._engine, self._generator = None, None

    @property
    def _pending(self) -> int:
        return len(self._generator.pending) if self._generator is not None else 0

    def status(self) -> dict[str, Any]:
        return {
            "scoring_blocks": {"done": len(self._warmed), "total": self.scoring_total},
            "schema_blocks_pending": self._pending,
            "schema_blocks_compiled": self.schemas_compiled,
            "working": self.working,
        }

    @property
    def settled(self) -> bool:
        """Nothing left to compile for the catalog as it was last looked at (nothing can be without an engine)."""
        if self._engine is None:
            return True
        idle = not self.working and not self._wake.is_set()
        return idle and not self._pending and len(self._warmed) >= self.scoring_total

    @contextmanager
    def busy(self) -> Iterator[None]:
        """A `run` in progress: no block job starts until every one has ended."""
        self._runs += 1
        self._quiet = anyio.Event() if self._quiet.is_set() else self._quiet
        try:
            yield
        finally:
            self._runs -= 1
            if self._runs == 0:
                self._quiet_since = anyio.current_time()
                self._quiet.set()
                self.wake()

    async def idle_for(self, seconds: float) -> None:
        """Return once no `run` has been in progress for `seconds`."""
        while True:
            await self._quiet.wait()
            left = self._quiet_since + seconds - anyio.current_time()
            if self._runs == 0 and left <= 0:
                return
            await anyio.sleep(max(left, 0.01))

    def wake(self) -> None:
        """Look for blocks to compile (the catalog's new tools, the tools a run showed cold)."""
        self._wake.set()

    async def run(self) -> None:
        """The warming task: runs until cancelled."""
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            if self._engine is None:
                continue
            self.working = True
            try:
                await self._scoring()
                await self._schemas()
            except anyio.get_cancelled_exc_class():
                raise
            except Exception:  # boundary: blocks are a speed-up; without them run compiles what it needs itself
                logger.exception("compiling blocks in the background failed; run compiles them when it needs them")
            finally:
                self.working = False

    async def _scoring(self) -> None:
        engine = self._engine
        if engine is None or not self._scoring_on:
            return
        distinct = {record.content_hash or record.name: record for record in self._records()}
        self.scoring_total = len(distinct)
        todo = [(key, record) for key, record in distinct.items() if key not in self._warmed]
        if not todo:
            return
        started, compiled = time.monotonic(), 0
        logger.info("scoring blocks: compiling them for %d tools", len(todo))
        for number, (key, record) in enumerate(todo, start=1):
            await self._quiet.wait()
            if self._engine is not engine:  # detached: the engine is closing
                return
            compiled += await engine.prepare_scoring([record])
            self._warmed.add(key)
            if number % LOG_EVERY == 0 or number == len(todo):
                logger.info(
                    "scoring blocks: %d of %d tools (%d compiled, %.0f s)",
                    len(self._warmed),
                    self.scoring_total,
                    compiled,
                    time.monotonic() - started,
                )

    async def _schemas(self) -> None:
        generator = self._generator
        if generator is None:
            return

        async def between() -> bool:
            await self._quiet.wait()
            return self._generator is generator  # else detached: the engine is closing

        self.schemas_compiled += await generator.compile_pending(between)
