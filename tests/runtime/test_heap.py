"""`_heap.settle`: a serving process freezes what start-up built once it is warm (never the test process)."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import stdio_client

from tests.conftest import faulty, gateway_params, text_of, write_config

SETTLE = """
import gc, weakref
from nexus_gateway.runtime import _heap

class Node:
    pass

garbage = Node(); garbage.me = garbage  # a cycle only the collector frees
gone = weakref.ref(garbage)
del garbage
kept = [Node() for _ in range(1000)]
_heap.settle()
assert gone() is None, "start-up's garbage is collected before the freeze"
assert gc.get_freeze_count() >= 1000
made = len(gc.get_objects())  # frozen objects are left out of the collector's generations
assert made < gc.get_freeze_count(), (made, gc.get_freeze_count())
late = Node(); late.me = late  # garbage made afterwards is collected as before
late_ref = weakref.ref(late)
del late
gc.collect()
assert late_ref() is None
print("ok")
"""


def test_settle_collects_then_freezes_and_later_garbage_is_still_collected():
    done = subprocess.run([sys.executable, "-c", SETTLE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    assert gc.get_freeze_count() == 0  # the test process itself is never frozen


@pytest.mark.anyio
async def test_serve_settles_its_heap_once_the_gateway_is_warm(tmp_path: Path):
    config = write_config(tmp_path, {"one": faulty()}, mode="passthrough")
    log = tmp_path / "stderr.log"
    with anyio.fail_after(60), log.open("w") as errlog:
        params = gateway_params(config, "--log-level", "debug")
        async with Client(stdio_client(params, errlog=errlog), cache=None) as client:
            with anyio.fail_after(30):
                while "heap settled" not in log.read_text():
                    await anyio.sleep(0.05)
            assert text_of(await client.call_tool("one__echo", {"text": "after the freeze"})) == "after the freeze"
    assert "objects frozen" in log.read_text()
