"""One thread owns the model and its context; async code reaches it through a queue.

`EngineWorker` builds the runtime on its own thread, runs submitted jobs there, and closes the runtime
there. `await worker.call(fn)` queues `fn(runtime)` and wakes the caller's event loop when it is done
(through the loop's anyio token), so no anyio worker thread sits blocked while the model runs. A
cancelled caller stops waiting; its job still runs to completion (llama.cpp cannot be interrupted
between a decode's ubatches from here), and its result is dropped.

`await worker.call_stepped(fn)` runs a job that decodes a token at a time: `fn(runtime)` is a generator
that yields steps and is sent their results. Between plain jobs, the worker gathers the pending step of
every such job and serves them together (`step_many`, one batched decode for all concurrent sessions),
so eight clients generating at once share each pass over the model's weights.

`LocalEngine` is the `Engine` (engine/__init__.py) generation uses: sessions, turns, argument decoding and
compilation on top; `run` reaches any function of the runtime (benchmarks, evaluations, tests).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Generator, Iterable, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.engine import ColdSchema, Completion, Decoded, Decoding, Likelihoods, Session, Turn
from nexus_gateway.engine.compiler import CompileReport, Progress, compile_tools
from nexus_gateway.engine.completion import complete_steps
from nexus_gateway.engine.decoding import decode_steps
from nexus_gateway.engine.runtime import Runtime
from nexus_gateway.engine.scoring import compile_scoring, request_likelihoods
from nexus_gateway.engine.settings import EngineSettings
from nexus_gateway.errors import EngineError

logger = logging.getLogger(__name__)

R = TypeVar("R")
T = TypeVar("T")


class _Job:
    def __init__(self, fn: Callable[[Any], Any], *, stepped: bool = False) -> None:
        self.fn = fn
        self.stepped = stepped
        self.token = anyio.lowlevel.current_token()
        self.done = anyio.Event()
        self.result: Any = None
        self.error: BaseException | None = None

    def finish(self) -> None:
        try:
            anyio.from_thread.run_sync(self.done.set, token=self.token)
        except RuntimeError:
            logger.debug("engine job finished after its event loop closed")


class _Stepping:
    """A stepped job in progress: its generator and the step it waits on."""

    def __init__(self, job: _Job, steps: Generator[Any, Any, Any], pending: Any) -> None:
        self.job, self.steps, self.pending = job, steps, pending


class EngineWorker(Generic[R]):
    def __init__(
        self,
        build: Callable[[], R],
        close: Callable[[R], None],
        *,
        step_many: Callable[[R, list[Any]], list[Any]] | None = None,
        name: str = "nexus-engine",
    ) -> None:
        self._build = build
        self._close = close
        self._step_many = step_many
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)

    async def start(self) -> None:
        """Start the thread and wait until the runtime is built (its error, if building failed)."""
        self._thread.start()
        await self.call(lambda runtime: None)

    async def call(self, fn: Callable[[R], T]) -> T:
        """Run `fn(runtime)` on the engine thread and return its result (or raise its exception)."""
        result: T = await self._submit(_Job(fn))
        return result

    async def call_stepped(self, fn: Callable[[R], Generator[Any, Any, T]]) -> T:
        """Run the stepped job `fn(runtime)`, its steps batched with those of other stepped jobs."""
        if self._step_many is None:
            raise EngineError("this engine worker cannot batch steps")
        result: T = await self._submit(_Job(fn, stepped=True))
        return result

    async def _submit(self, job: _Job) -> Any:
        if not self._thread.is_alive():
            raise EngineError("the engine is not running")
        self._queue.put(job)
        await job.done.wait()
        if job.error is not None:
            raise job.error
        return job.result

    async def aclose(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            await anyio.to_thread.run_sync(self._thread.join)

    def _main(self) -> None:
        runtime: R | None = None
        startup_error: BaseException | None = None
        try:
            runtime = self._build()
        except BaseException as exc:
            startup_error = exc
        active: list[_Stepping] = []
        closing = False
        while not closing or active:
            for job in self._take(wait=not active and not closing):
                if job is None:
                    closing = True
                elif runtime is None:
                    job.error = startup_error
                    job.finish()
                else:
                    self._begin(runtime, job, active)
            if active and runtime is not None:
                self._advance(runtime, active)
        if runtime is not None:
            self._close(runtime)

    def _take(self, *, wait: bool) -> list[_Job | None]:
        """The queued jobs: at least one when `wait` (blocking for it), else whatever is there."""
        jobs: list[_Job | None] = [self._queue.get()] if wait else []
        while True:
            try:
                jobs.append(self._queue.get_nowait())
            except queue.Empty:
                return jobs

    def _begin(self, runtime: R, job: _Job, active: list[_Stepping]) -> None:
        try:
            result = job.fn(runtime)
            if job.stepped:
                active.append(_Stepping(job, result, next(result)))
                return
            job.result = result
        except StopIteration as done:  # a stepped job that needed no step
            job.result = done.value
        except BaseException as exc:
            job.error = exc
        job.finish()

    def _advance(self, runtime: R, active: list[_Stepping]) -> None:
        """Serve the pending step of every stepped job in one call, and move each to its next step."""
        assert self._step_many is not None
        try:
            replies = self._step_many(runtime, [stepping.pending for stepping in active])
        except BaseException as exc:  # the batch failed: every job in it hears why (and cleans up)
            for stepping in active:
                self._resume(stepping, error=exc)
        else:
            for stepping, reply in zip(active, replies, strict=True):
                self._resume(stepping, reply)
        active[:] = [stepping for stepping in active if stepping.pending is not None]

    @staticmethod
    def _resume(stepping: _Stepping, reply: Any = None, *, error: BaseException | None = None) -> None:
        """Send the step's result (or throw its error) into the job; finish the job when it returns or fails."""
        try:
            if error is not None:
                stepping.pending = stepping.steps.throw(error)
            else:
                stepping.pending = stepping.steps.send(reply)
            return
        except StopIteration as done:
            stepping.job.result = done.value
        except BaseException as exc:
            stepping.job.error = exc
        stepping.pending = None
        stepping.job.finish()


class LocalEngine:
    """The local llama.cpp engine behind an async API: `async with LocalEngine(settings) as engine: ...`."""

    def __init__(self, settings: EngineSettings, *, compiled_root: Path | None = None) -> None:
        self.settings = settings
        self._worker: EngineWorker[Runtime] = EngineWorker(
            lambda: Runtime.load(settings, compiled_root=compiled_root), Runtime.close, step_many=Runtime.append_each
        )

    async def __aenter__(self) -> LocalEngine:
        try:
            await self._worker.start()
        except BaseException:
            await self._worker.aclose()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._worker.aclose()

    async def run(self, fn: Callable[[Runtime], T]) -> T:
        """Run any synchronous function of the runtime on the engine thread (benchmarks use this)."""
        return await self._worker.call(fn)

    async def run_stepped(self, fn: Callable[[Runtime], Generator[Any, Any, T]]) -> T:
        """Run a stepped job (a generator of one-token steps, `decode_steps`): concurrent ones are batched."""
        return await self._worker.call_stepped(fn)

    async def open_session(self) -> Session:
        state = await self._worker.call(Runtime.open_session)
        return Session(state.seq)

    async def close_session(self, session: Session) -> None:
        await self._worker.call(lambda rt: rt.close_session(rt.session(session.id)))

    async def fork_session(self, session: Session) -> Session:
        state = await self._worker.call(lambda rt: rt.fork_session(rt.session(session.id)))
        return Session(state.seq)

    async def depth(self, session: Session) -> int:
        return await self._worker.call(lambda rt: rt.depth(rt.session(session.id)))

    async def append_turn(self, session: Session, turn: Turn, *, max_depth: int) -> None:
        await self._worker.call(lambda rt: rt.append_turn(rt.session(session.id), turn, max_depth=max_depth))

    async def decode_arguments(self, session: Session, record: ToolRecord, query: str, how: Decoding) -> Decoded:
        """Decoded with the steps of every other session decoding at the same time (one batch a token)."""
        return await self._worker.call_stepped(lambda rt: decode_steps(rt, rt.session(session.id), record, query, how))

    async def prepare_blocks(self, records: Sequence[ToolRecord]) -> None:
        chosen = list(records)
        await self._worker.call(lambda rt: compile_tools(rt, chosen) if rt.store is not None else None)

    async def cold_schema(self, session: Session, record: ToolRecord) -> ColdSchema | None:
        return await self._worker.call(lambda rt: rt.cold_schema(rt.session(session.id), record))

    async def prepare_scoring(self, records: Sequence[ToolRecord]) -> int:
        chosen = list(records)
        return await self._worker.call(lambda rt: compile_scoring(rt, chosen))

    async def request_likelihoods(self, records: Sequence[ToolRecord], query: str) -> Likelihoods:
        chosen = list(records)
        return await self._worker.call(lambda rt: request_likelihoods(rt, chosen, query))

    async def complete(
        self, instruction: str, context: str, query: str, *, grammar: str, max_tokens: int
    ) -> Completion:
        """Decoded with the steps of every other stepped job at the same time (one batch a token)."""
        return await self._worker.call_stepped(
            lambda rt: complete_steps(rt, instruction, context, query, grammar, max_tokens)
        )

    async def compile(self, records: Iterable[ToolRecord], progress: Progress | None = None) -> CompileReport:
        chosen = list(records)
        return await self._worker.call(lambda rt: compile_tools(rt, chosen, progress))
