"""The engine worker: stepped jobs from concurrent callers are served in shared batches."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import anyio
import pytest

from nexus_gateway.engine.worker import EngineWorker
from nexus_gateway.generation.generator import ArgumentGenerator
from tests.engine.conftest import EMAIL, WEATHER, settings

pytestmark = pytest.mark.anyio


def counting(name: str, steps: int) -> Generator[tuple[str, int], int, str]:
    total = 0
    for i in range(steps):
        total += yield name, i
    return f"{name}:{total}"


async def test_stepped_jobs_of_concurrent_callers_share_batches_and_get_their_own_results():
    batches: list[list[Any]] = []

    def step_many(runtime: object, steps: list[tuple[str, int]]) -> list[int]:
        batches.append(steps)
        return [index * 10 for _, index in steps]

    worker: EngineWorker[object] = EngineWorker(object, lambda runtime: None, step_many=step_many)
    await worker.start()
    results: dict[str, str] = {}

    async def call(name: str, steps: int) -> None:
        results[name] = await worker.call_stepped(lambda runtime: counting(name, steps))

    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                for name, steps in (("a", 3), ("b", 5), ("c", 0)):
                    group.start_soon(call, name, steps)
    finally:
        await worker.aclose()
    assert results == {"a": "a:30", "b": "b:100", "c": "c:0"}
    assert max(len(batch) for batch in batches) == 2  # a and b stepped together
    assert sum(len(batch) for batch in batches) == 8  # every step served exactly once


async def test_a_failed_batch_fails_every_job_in_it_and_the_worker_goes_on():
    def step_many(runtime: object, steps: list[Any]) -> list[int]:
        raise RuntimeError("context full")

    worker: EngineWorker[object] = EngineWorker(object, lambda runtime: None, step_many=step_many)
    await worker.start()
    try:
        with anyio.fail_after(10):
            with pytest.raises(RuntimeError, match="context full"):
                await worker.call_stepped(lambda runtime: counting("a", 2))
            assert await worker.call(lambda runtime: "still serving") == "still serving"
    finally:
        await worker.aclose()


async def test_batched_generation_matches_generation_alone(tmp_path, monkeypatch: pytest.MonkeyPatch):
    """Two sessions decoding at once through the engine are batched, and give what each gives alone."""
    from nexus_gateway.engine.runtime import Runtime
    from nexus_gateway.engine.worker import LocalEngine

    sizes: list[int] = []
    append_each = Runtime.append_each

    def recording(rt: Runtime, steps: list[Any]) -> list[Any]:
        sizes.append(len(steps))
        return append_each(rt, steps)

    monkeypatch.setattr(Runtime, "append_each", recording)

    requests = ((WEATHER, "What is the weather in Paris?"), (EMAIL, "Email bob@example.com about lunch"))
    async with LocalEngine(settings(sessions=2), compiled_root=tmp_path) as engine:
        generator = ArgumentGenerator(engine, mode="signature", max_tokens=64)
        alone = []
        for record, query in requests:
            session = await engine.open_session()
            alone.append((await generator.generate(session, record, query)).text)
            await engine.close_session(session)
        sessions = [await engine.open_session() for _ in requests]
        together: list[str] = ["", ""]

        async def generate(i: int) -> None:
            together[i] = (await generator.generate(sessions[i], requests[i][0], requests[i][1])).text

        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                for i in range(len(requests)):
                    group.start_soon(generate, i)
    assert together == alone, (together, alone)
    assert max(sizes) == 2  # the two sessions' steps went through one decode
