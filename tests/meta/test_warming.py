"""`BlockWarmer`: every catalog tool's scoring block once, the schema blocks a run showed cold afterwards, and
no block job while a run is in progress (a scripted engine records the order of what it was asked)."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.engine import ColdSchema, Decoded, Decoding, Session
from nexus_gateway.generation.generator import ArgumentGenerator
from nexus_gateway.meta.warming import BlockWarmer

pytestmark = pytest.mark.anyio


def tool(name: str, description: str = "") -> ToolRecord:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    return ToolRecord.from_tool("s", {"name": name, "description": description or name, "inputSchema": schema})


class Engine:
    """Compiles nothing; records each block job, and lets a test hold a job until it says go."""

    def __init__(self) -> None:
        self.jobs: list[str] = []
        self.schemas: set[str] = set()
        self.gate = anyio.Event()
        self.gate.set()

    async def prepare_scoring(self, records: Sequence[ToolRecord]) -> int:
        await self.gate.wait()
        self.jobs += [f"scoring {record.name}" for record in records]
        return len(records)

    async def prepare_blocks(self, records: Sequence[ToolRecord]) -> None:
        self.jobs += [f"schema {record.name}" for record in records]
        self.schemas.update(record.name for record in records)

    async def cold_schema(self, session: Session, record: ToolRecord) -> ColdSchema | None:
        return None if record.name in self.schemas else "uncompiled"

    async def decode_arguments(self, session: Session, record: ToolRecord, query: str, how: Decoding) -> Decoded:
        self.jobs.append(f"fill {record.name} {how.form}")
        return Decoded('{"q": "x"}', True, None, 4, 0.0, 0.0)


async def settled(warmer: BlockWarmer) -> None:
    with anyio.fail_after(5):
        while not warmer.settled:
            await anyio.sleep(0.01)


async def test_each_tool_definition_gets_its_scoring_block_once_and_new_tools_theirs_later():
    engine, catalog = Engine(), [tool("a"), tool("b"), tool("b")]  # b twice: one definition
    warmer = BlockWarmer(lambda: catalog)
    generator = ArgumentGenerator(engine, mode="splice", cold="signature")  # type: ignore[arg-type]
    async with anyio.create_task_group() as group:
        group.start_soon(warmer.run)
        warmer.wake()
        await anyio.wait_all_tasks_blocked()
        assert engine.jobs == []  # no engine yet: nothing compiles
        warmer.attach(engine, generator)  # type: ignore[arg-type]
        await settled(warmer)
        assert engine.jobs == ["scoring s__a", "scoring s__b"]
        catalog.append(tool("c"))
        warmer.wake()
        await settled(warmer)
        assert engine.jobs[2:] == ["scoring s__c"]
        assert warmer.status()["scoring_blocks"] == {"done": 3, "total": 3}
        group.cancel_scope.cancel()


async def test_no_block_job_starts_while_a_run_is_in_progress_and_cold_schemas_compile_after_it():
    engine, catalog = Engine(), [tool("a"), tool("b")]
    warmer = BlockWarmer(lambda: catalog)
    generator = ArgumentGenerator(engine, mode="splice", cold="signature")  # type: ignore[arg-type]
    engine.gate = anyio.Event()  # the first scoring job waits until the run below has begun
    async with anyio.create_task_group() as group:
        group.start_soon(warmer.run)
        warmer.attach(engine, generator)  # type: ignore[arg-type]
        await anyio.wait_all_tasks_blocked()
        with warmer.busy():
            engine.gate.set()  # the job under way finishes; no other starts
            await anyio.wait_all_tasks_blocked()
            await generator.generate(Session(0), catalog[1], "look up x")
            await anyio.wait_all_tasks_blocked()
            assert engine.jobs == ["scoring s__a", "fill s__b signature"]
            assert not warmer.settled
        await settled(warmer)
        assert engine.jobs[2:] == ["scoring s__b", "schema s__b"]
        await generator.generate(Session(0), catalog[1], "look up x")
        assert engine.jobs[-1] == "fill s__b splice" and warmer.status()["schema_blocks_compiled"] == 1
        group.cancel_scope.cancel()


async def test_with_warm_blocks_off_only_the_schemas_shown_cold_are_compiled():
    engine, catalog = Engine(), [tool("a"), tool("b")]
    warmer = BlockWarmer(lambda: catalog, scoring=False)
    generator = ArgumentGenerator(engine, mode="splice", cold="signature")  # type: ignore[arg-type]
    async with anyio.create_task_group() as group:
        group.start_soon(warmer.run)
        warmer.attach(engine, generator)  # type: ignore[arg-type]
        await generator.generate(Session(0), catalog[0], "look up x")
        warmer.wake()
        await anyio.wait_all_tasks_blocked()
        assert engine.jobs == ["fill s__a signature", "schema s__a"] and warmer.settled
        group.cancel_scope.cancel()


async def test_idle_for_waits_until_no_run_has_been_in_progress_for_that_long():
    """What a session's queued turns wait for (meta/run.py `_settle_later`): runs back to back keep it waiting."""
    warmer = BlockWarmer(lambda: [])
    done: list[float] = []

    async def settle() -> None:
        await warmer.idle_for(2.0)
        done.append(anyio.current_time())

    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            with warmer.busy():
                group.start_soon(settle)
                await anyio.sleep(0.3)
            assert not done  # a run was in progress until now
            for _ in range(3):  # runs back to back, 0.1 s apart: never idle for 2 s
                with warmer.busy():
                    await anyio.sleep(0.05)
                    assert not done
                ended = anyio.current_time()
                await anyio.sleep(0.1)
                assert not done
    assert done and done[0] - ended >= 1.9  # a stall between the two clock reads is allowed for
