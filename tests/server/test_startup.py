"""`serve` in passthrough mode starts light: a real gateway process over stdio, inspected after tools/list.

What it loaded is read from /proc/PID/maps (the shared objects mapped into the process), so an import
anywhere, at start-up or in a background task, is seen."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import psutil
import pytest
from mcp import Client

from tests.conftest import gateway_params, write_config

ECHO = {"command": sys.executable, "args": ["-m", "nexus_gateway.bench.echo_server"]}
HEAVY = ("_multiarray_umath", "onnxruntime", "libllama", "libggml", "_swigfaiss", "openblas")
"""Pieces of the file names of numpy, onnxruntime, llama.cpp and faiss shared objects."""
OVER_THE_SDK_MB = 30
"""How much more than its own upstream (a bare SDK server, measured in the same run) a passthrough gateway may
hold: numpy and onnxruntime alone are more. The absolute figure (<= 80 MB) is `bench proxy`'s to report."""


def gateway_process(config: Path) -> psutil.Process:
    """The `nexus-gateway serve --config CONFIG` child of this test process (an earlier test's may still be
    shutting down)."""
    found = [
        child for child in psutil.Process().children() if "serve" in child.cmdline() and str(config) in child.cmdline()
    ]
    assert len(found) == 1, found
    return found[0]


def heavy_libraries(process: psutil.Process) -> list[str]:
    maps = Path(f"/proc/{process.pid}/maps").read_text()
    mapped = {line.rsplit("/", 1)[-1] for line in maps.splitlines() if ".so" in line}
    return sorted(name for name in mapped if any(piece in name for piece in HEAVY))


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "era"), [("passthrough", "legacy"), ("passthrough", "auto"), ("auto", "legacy")])
async def test_passthrough_serve_lists_tools_without_loading_numpy_onnxruntime_or_llama(
    tmp_path: Path, mode: str, era: str
):
    """`auto` (the default) with a catalog under `auto_threshold` serves as passthrough, and starts as light."""
    config = write_config(tmp_path, {"echo": ECHO}, mode=mode)
    with anyio.fail_after(120):
        async with Client(gateway_params(config, "--log-level", "warning"), mode=era, cache=None) as client:
            tools = await client.list_tools()
            assert [tool.name for tool in tools.tools] == ["echo__echo"]
            assert (await client.call_tool("echo__echo", {"text": "hi"})).is_error is False
            gateway = gateway_process(config)
            assert heavy_libraries(gateway) == []
            (upstream,) = [  # the echo server itself, not the launcher in front of it
                child
                for child in gateway.children(recursive=True)
                if ECHO["args"][-1] in child.cmdline() and not child.children()
            ]
            extra = (gateway.memory_info().rss - upstream.memory_info().rss) / 2**20
            assert extra <= OVER_THE_SDK_MB, f"{extra:.1f} MB more than a bare SDK server"


@pytest.mark.anyio
async def test_routed_serve_loads_the_embedder_only_to_index_or_search(tmp_path: Path):
    """Routed mode builds its retriever in the background; a search finds the tool once it has."""
    config = write_config(tmp_path, {"echo": ECHO}, mode="routed", embedder="hashing")
    with anyio.fail_after(120):
        async with Client(gateway_params(config, "--log-level", "warning"), mode="legacy", cache=None) as client:
            found = await client.call_tool("search_tools", {"query": "echo the text"})
            assert "echo__echo" in str(found.content)
            assert any("_multiarray_umath" in name for name in heavy_libraries(gateway_process(config)))
