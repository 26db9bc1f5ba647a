"""Large results from a real stdio upstream: linear in their size, never blocking other calls, capped."""

import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from nexus_gateway.bench.bulk_server import blob_text
from nexus_gateway.gateway import Gateway
from nexus_gateway.server.app import build_server
from tests.conftest import make_config, text_of

pytestmark = pytest.mark.anyio
ERAS = ["legacy", "auto"]


def bulk(**extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-m", "nexus_gateway.bench.bulk_server"], **extra}


async def call(gateway: Gateway, era: str, tool: str, arguments: dict[str, Any]) -> Any:
    async with Client(build_server(gateway), mode=era, cache=None) as client:  # type: ignore[arg-type]
        return await client.call_tool(tool, arguments)


@pytest.mark.parametrize("era", ERAS)
async def test_a_40_mb_result_arrives_intact_through_the_gateway(tmp_path: Path, era: str):
    config = make_config(tmp_path, {"big": bulk(max_result_bytes=64 << 20)}, mode="passthrough", call_timeout=60)
    async with Gateway(config) as gateway:
        await gateway.wait_ready()
        with anyio.fail_after(20):  # the SDK's stdio client needs 30 s and more
            result = await call(gateway, era, "big__blob", {"megabytes": 40})
    text = text_of(result)
    assert not result.is_error and len(text) == 40_000_000
    assert text == blob_text(40)


async def test_a_small_call_to_another_upstream_completes_while_a_big_result_streams(tmp_path: Path):
    servers = {"big": bulk(max_result_bytes=64 << 20), "small": bulk()}
    config = make_config(tmp_path, servers, mode="passthrough", call_timeout=60)
    async with Gateway(config) as gateway:
        await gateway.wait_ready()
        finished: dict[str, float] = {}
        small_before_big = 0

        async def big_call() -> None:
            # 30 MB written a MiB every 30 ms: about a second of streaming.
            result = await call(gateway, "legacy", "big__blob", {"megabytes": 30, "pause_ms": 30})
            assert len(text_of(result)) == 30_000_000
            finished["big"] = time.monotonic()

        async def small_calls() -> None:
            nonlocal small_before_big
            async with Client(build_server(gateway), mode="legacy", cache=None) as client:
                while "big" not in finished:
                    assert text_of(await client.call_tool("small__echo", {"text": "hi"})) == "hi"
                    small_before_big += "big" not in finished
                    finished.setdefault("first small", time.monotonic())
                    await anyio.sleep(0.02)

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(big_call)
                tg.start_soon(small_calls)
    assert finished["first small"] < finished["big"]
    # Calls queued behind the big result would all finish after it; here several finish while it streams.
    assert small_before_big >= 3, f"only {small_before_big} small calls finished while the big result streamed"


@pytest.mark.parametrize("era", ERAS)
async def test_a_result_over_the_cap_is_an_error_result_and_the_upstream_answers_the_next_call(
    tmp_path: Path, era: str
):
    config = make_config(tmp_path, {"big": bulk(max_result_bytes=1 << 20)}, mode="passthrough")
    async with Gateway(config) as gateway:
        await gateway.wait_ready()
        with anyio.fail_after(20):
            result = await call(gateway, era, "big__blob", {"megabytes": 3})
            assert result.is_error
            message = text_of(result)
            assert "3,000,0" in message and "max_result_bytes" in message and "1,048,576" in message
            after = await call(gateway, era, "big__echo", {"text": "still here"})
        assert text_of(after) == "still here" and not after.is_error
        upstream = gateway.pool.get("big")
        assert upstream is not None and upstream.restarts == 0
