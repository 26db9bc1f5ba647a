"""The `openai` engine backend against llama-cpp-python's own server (`python -m llama_cpp.server`, the
packaged default model): `run` fills through it, the generator fills through it, and the re-ranker scores
through it, while the gateway's process loads no model. A handful of calls: agreement with the local engine is
measured by `nexus-gateway eval arguments --backend openai --compare-local`, not here."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from nexus_gateway.engine.model import resolve_model
from nexus_gateway.engine.remote import RemoteEngine
from nexus_gateway.engine.settings import EngineSettings
from nexus_gateway.evals.dataset import tool_records
from nexus_gateway.generation.generator import ArgumentGenerator
from nexus_gateway.generation.rerank import Reranker
from tests.conftest import ROOT, make_config, running_gateway, text_of

pytestmark = pytest.mark.anyio
META = {"command": sys.executable, "args": [str(ROOT / "tests" / "servers" / "meta_server.py")]}
EMAIL = {
    "name": "send_email",
    "description": "Send an e-mail to someone",
    "inputSchema": {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]},
}


@pytest.fixture(scope="module")
def inference_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama_cpp.server on a free loopback port with the packaged default model; its API root."""
    missing = [
        name
        for name in ("fastapi", "pydantic_settings", "starlette_context", "sse_starlette")
        if not importlib.util.find_spec(name)
    ]
    if missing:
        pytest.fail(f"llama_cpp.server needs {', '.join(missing)}: pip install -e '.[dev]'")
    from tests.conftest import free_port

    port = free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(resolve_model(None).path),
        "--host",
        "127.0.0.1",
    ]
    command += [
        "--port",
        str(port),
        "--n_ctx",
        "2048",
        "--n_threads",
        "1",
        "--n_threads_batch",
        "1",
        "--verbose",
        "false",
    ]
    with log.open("wb") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.2)  # polling a port that is not open yet: bounded by the deadline above
        yield base
    finally:
        server.terminate()
        server.wait(timeout=20)


@pytest.fixture
def no_local_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to load a llama.cpp model or runtime in this process fails the test."""
    from nexus_gateway.engine import llama, runtime

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a llama.cpp model was loaded in the gateway process")

    monkeypatch.setattr(llama.LlamaModel, "__init__", refuse)
    monkeypatch.setattr(runtime.Runtime, "load", refuse)


async def test_run_fills_through_the_inference_server_without_loading_a_model(
    tmp_path: Path, inference_server: str, no_local_model: None
):
    """One upstream tool: routed automatically, filled by the server (no re-ranking: see the test below)."""
    engine = {"backend": "openai", "base_url": inference_server, "model": "qwen2.5-coder-0.5b", "timeout": 300}
    config = make_config(tmp_path, {"meta": META}, mode="routed", run_mode="signature", engine=engine)
    async with running_gateway(config) as (_, client):
        with anyio.fail_after(360):  # the server's first prompt is decoded whole (the preamble), then reused
            result = await client.call_tool("run", {"request": 'echo the text "hello nexus"'})
    structured = result.structured_content
    assert not result.is_error and structured is not None, text_of(result)
    trace = structured["trace"]
    assert trace["tool"] == "meta__show_meta" and trace["arguments"] == {"text": "hello nexus"}, trace
    assert not trace["reranked"] and trace["placement"] == "prefill", trace


async def test_the_reranker_scores_through_the_inference_server(inference_server: str, no_local_model: None):
    records = list(tool_records([TAIL_LOG, EMAIL]).values())
    settings = EngineSettings(backend="openai", base_url=inference_server, timeout=300)
    with anyio.fail_after(180):
        async with RemoteEngine(settings) as engine:
            reranked = await Reranker(engine, k=2).rerank("email Bob", records, [0.5, 0.5])
    assert reranked.candidates == ("tail_log", "send_email") and reranked.choice == "send_email", reranked.trace()
    assert all(value < 0 for value in reranked.likelihood) and reranked.likelihood[1] > reranked.without


TAIL_LOG = {
    "name": "tail_log",
    "description": "Last lines of a log file",
    "inputSchema": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "lines": {"type": "integer", "minimum": 1}},
        "required": ["path"],
    },
}


async def test_arguments_filled_by_the_inference_server_validate(inference_server: str, no_local_model: None):
    record = tool_records([TAIL_LOG])["tail_log"]
    settings = EngineSettings(backend="openai", base_url=inference_server, timeout=300)
    with anyio.fail_after(300):
        async with RemoteEngine(settings) as engine:
            generated = await ArgumentGenerator(engine, mode="signature").generate(
                await engine.open_session(), record, "Show the last 20 lines of /var/log/syslog"
            )
    assert generated.schema_valid and generated.placement == "prefill", generated.trace()
    assert generated.arguments == {"path": "/var/log/syslog", "lines": 20}, generated.trace()
