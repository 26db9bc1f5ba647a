"""Traces (nexus_gateway/tracing.py): a call through the gateway is a SERVER span and a CLIENT span to the
upstream, named and attributed after the MCP semantic conventions, in the host's trace; the upstream gets the
client span's `traceparent` in `params._meta`. Spans go to the SDK's in-memory exporter."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from nexus_gateway import tracing
from nexus_gateway.config import TracingSettings
from nexus_gateway.upstreams.pool import Upstream
from tests.conftest import ROOT, make_config, running_gateway, text_of

pytestmark = pytest.mark.anyio
META = {"command": sys.executable, "args": [str(ROOT / "tests" / "servers" / "meta_server.py")]}
HOST_TRACE = "0af7651916cd43dd8448eb211c80319c"
HOST_PARENT = f"00-{HOST_TRACE}-b7ad6b7169203331-01"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use_provider(provider)
    try:
        yield exporter
    finally:
        tracing.use_provider(None)
        provider.shutdown()


def _one(spans: list[ReadableSpan], name: str, kind: SpanKind) -> ReadableSpan:
    found = [span for span in spans if span.name == name and span.kind == kind]
    assert len(found) == 1, [(span.name, span.kind) for span in spans]
    return found[0]


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_a_call_is_a_server_span_and_a_client_span_to_the_upstream_in_the_hosts_trace(
    tmp_path: Path, spans: InMemorySpanExporter, era: str
):
    config = make_config(tmp_path, {"meta": META}, mode="passthrough", tracing=True)
    async with running_gateway(config, era=era) as (_, client):
        with anyio.fail_after(30):
            result = await client.call_tool("meta__show_meta", {"text": "hi"}, meta={"traceparent": HOST_PARENT})
    assert not result.is_error, text_of(result)
    received = json.loads(text_of(result))["meta"]
    finished = list(spans.get_finished_spans())
    server = _one(finished, "tools/call meta__show_meta", SpanKind.SERVER)
    upstream = _one(finished, "tools/call show_meta", SpanKind.CLIENT)
    assert format(server.context.trace_id, "032x") == HOST_TRACE == format(upstream.context.trace_id, "032x")
    assert server.parent is not None and format(server.parent.span_id, "016x") == "b7ad6b7169203331"
    assert upstream.parent is not None and upstream.parent.span_id == server.context.span_id
    assert dict(server.attributes or {}) | {"jsonrpc.request.id": "-"} == {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "meta__show_meta",
        "jsonrpc.request.id": "-",
        "mcp.protocol.version": server.attributes["mcp.protocol.version"],
        "network.transport": "pipe",
    }
    assert server.attributes["mcp.protocol.version"] and server.attributes["jsonrpc.request.id"]
    assert dict(upstream.attributes or {}) == {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "show_meta",
        "network.transport": "pipe",
        "nexus.upstream": "meta",
    }
    span_id = format(upstream.context.span_id, "016x")
    assert received["traceparent"] == f"00-{HOST_TRACE}-{span_id}-01", received  # the client span's, not the host's


async def test_a_failed_tool_call_marks_both_spans_with_its_error_type(tmp_path: Path, spans: InMemorySpanExporter):
    config = make_config(tmp_path, {"meta": META}, mode="passthrough", tracing=True)
    async with running_gateway(config) as (_, client):
        with anyio.fail_after(30):
            result = await client.call_tool("meta__show_meta", {})  # `text` is required: the gateway refuses
            unknown = await client.call_tool("meta__nothing", {"text": "x"})
    assert result.is_error and unknown.is_error
    finished = list(spans.get_finished_spans())
    server = _one(finished, "tools/call meta__show_meta", SpanKind.SERVER)
    assert server.status.status_code == StatusCode.ERROR and server.attributes["error.type"] == "tool_error"
    assert not [span for span in finished if span.kind == SpanKind.CLIENT]  # nothing reached the upstream


async def test_tracing_off_makes_no_span_and_keeps_the_direct_path(tmp_path: Path, spans: InMemorySpanExporter):
    config = make_config(tmp_path, {"meta": META}, mode="passthrough")
    async with running_gateway(config) as (gateway, client):
        with anyio.fail_after(30):
            result = await client.call_tool("meta__show_meta", {"text": "hi"}, meta={"traceparent": HOST_PARENT})
        connection: Upstream = gateway.pool.upstreams["meta"]
        direct = connection.direct
    assert not result.is_error and spans.get_finished_spans() == ()
    assert direct is not None and not connection.tracing
    assert json.loads(text_of(result))["meta"]["traceparent"] == HOST_PARENT  # forwarded untouched


def test_the_otlp_endpoint_comes_from_the_config_then_the_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")
    assert tracing.endpoint(True) == "http://collector:4318/v1/traces"
    assert tracing.endpoint(TracingSettings(otlp_endpoint="http://mine:4318")) == "http://mine:4318/v1/traces"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:4318/v1/traces")
    assert tracing.endpoint(True) == "http://traces:4318/v1/traces"
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT")
    assert tracing.endpoint(True) is None


def test_tracing_takes_true_or_an_object_and_stays_off_by_default(tmp_path: Path):
    assert make_config(tmp_path, {}).nexus.tracing is False
    on = make_config(tmp_path, {}, tracing={"otlp_endpoint": "http://127.0.0.1:4318"}).nexus.tracing
    assert isinstance(on, TracingSettings) and on.otlp_endpoint == "http://127.0.0.1:4318" and bool(on)
