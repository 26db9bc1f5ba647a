"""The `openai` engine backend against llama-cpp-python's own server (`python -m llama_cpp.server`, the
packaged default model): `run` fills and calls through it, and the re-ranker scores through it, while the
gateway's process loads no model. A handful of calls: the model's quality is measured by
`nexus-gateway bench inference-server`, not here."""

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
from tests.conftest import make_config, running_gateway, text_of

pytestmark = pytest.mark.anyio
TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}


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


async def test_run_re_ranks_fills_and_calls_through_the_inference_server_without_loading_a_model(
    tmp_path: Path, inference_server: str, no_local_model: None
):
    engine = {"backend": "openai", "base_url": inference_server, "model": "qwen2.5-coder-0.5b"}
    config = make_config(
        tmp_path, {"time": TIME}, mode="routed", run_mode="signature", search_k=1, rerank_k=1, engine=engine
    )
    async with running_gateway(config) as (_, client):
        with anyio.fail_after(240):
            result = await client.call_tool("run", {"request": "current time in Tokyo"})
    structured = result.structured_content
    assert not result.is_error and structured is not None, text_of(result)
    trace = structured["trace"]
    assert structured["status"] == "called" and "Asia/Tokyo" in text_of(result), trace
    assert trace["tool"] == "time__get_current_time" and trace["arguments"] == {"timezone": "Asia/Tokyo"}, trace
    if trace["reranked"]:  # below the gate: the server scored the candidate against no tool at all
        assert trace["scores"][0]["likelihood"] > trace["likelihood_without_tool"], trace


SCHEMAS = [
    {
        "name": "create_event",
        "description": "Create a calendar event",
        "inputSchema": {
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "date": {"type": "string", "description": "YYYY-MM-DD"},
                "visibility": {"type": "string", "enum": ["default", "public", "private"]},
            },
            "required": ["title", "date"],
        },
    },
    {
        "name": "tail_log",
        "description": "Last lines of a log file",
        "inputSchema": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "lines": {"type": "integer", "minimum": 1}},
            "required": ["path"],
        },
    },
]


@pytest.mark.parametrize(
    ("tool", "request_text", "expected"),
    [
        ("create_event", "Add a private event 'Dentist' on 2026-03-14", {"title": "Dentist", "date": "2026-03-14"}),
        ("tail_log", "Show the last 20 lines of /var/log/syslog", {"path": "/var/log/syslog", "lines": 20}),
    ],
)
async def test_arguments_filled_by_the_inference_server_validate(
    inference_server: str, no_local_model: None, tool: str, request_text: str, expected: dict[str, object]
):
    record = tool_records(SCHEMAS)[tool]
    settings = EngineSettings(backend="openai", base_url=inference_server)
    with anyio.fail_after(120):
        async with RemoteEngine(settings) as engine:
            generated = await ArgumentGenerator(engine, mode="signature").generate(
                await engine.open_session(), record, request_text
            )
    assert generated.schema_valid, generated.trace()
    assert generated.arguments is not None and expected.items() <= generated.arguments.items(), generated.trace()
