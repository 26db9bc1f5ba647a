"""Traces (nexus_gateway/tracing.py): a call through the gateway is a SERVER span and a CLIENT span to the
upstream, named and attributed after the MCP semantic conventions, in the host's trace; the upstream gets the
client span's `traceparent` in `params._meta`. Spans go to the SDK's in-memory exporter."""

from __future__ import annotations

import http.server
import json
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from nexus_gateway import tracing
from nexus_gateway.config import TracingSettings
from nexus_gateway.upstreams.pool import Upstream
from tests.conftest import ROOT, make_config, running_gateway, start_gateway_http, text_of, write_config

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


class _Collector(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver: every exported span, decoded, in `spans` (name, kind, attributes)."""

    spans: list[tuple[str, int, dict[str, str]]] = []

    def do_POST(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        body = self.rfile.read(int(self.headers["content-length"]))
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                for span in scope.spans:
                    values = {kv.key: kv.value.string_value for kv in span.attributes}
                    type(self).spans.append((span.name, span.kind, values))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


async def test_an_http_gateway_exports_its_spans_over_otlp_with_the_session_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A real `serve --transport http` process, `tracing: {otlp_endpoint}`, a real OTLP/HTTP receiver."""
    collector = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")  # the batch processor exports every 50 ms
    endpoint = f"http://127.0.0.1:{collector.server_address[1]}"
    config = write_config(tmp_path, {"meta": META}, mode="passthrough", tracing={"otlp_endpoint": endpoint})
    process, url = start_gateway_http(config)
    try:
        with anyio.fail_after(30):
            async with Client(f"{url}/mcp", mode="legacy", cache=None) as client:
                result = await client.call_tool("meta__show_meta", {"text": "hi"})
            while not any(name == "tools/call meta__show_meta" for name, _, _ in _Collector.spans):
                await anyio.sleep(0.05)  # polling the receiver: bounded by fail_after
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=15)
        collector.shutdown()
    assert not result.is_error, text_of(result)
    server = [attrs for name, kind, attrs in _Collector.spans if name == "tools/call meta__show_meta"]
    client_side = [attrs for name, kind, attrs in _Collector.spans if name == "tools/call show_meta"]
    assert len(server) == 1 and server[0]["network.transport"] == "tcp" and server[0]["mcp.session.id"], server
    assert len(client_side) == 1 and client_side[0]["nexus.upstream"] == "meta", _Collector.spans
