"""OpenTelemetry traces of what the gateway serves and what it asks of upstreams, after the GenAI MCP
semantic conventions (https://opentelemetry.io/docs/specs/semconv/gen-ai/mcp/):

    host --tools/call x--> [SERVER span "tools/call x"]               server/_tracing.py
                               `-> [CLIENT span "tools/call x"] --> upstream, traceparent in params._meta

Span names are `{mcp.method.name} {target}` (the tool or prompt name; the method alone otherwise);
attributes `mcp.method.name`, `mcp.session.id`, `mcp.protocol.version`, `jsonrpc.request.id`,
`gen_ai.operation.name` (`execute_tool`), `gen_ai.tool.name`, `gen_ai.prompt.name`, `mcp.resource.uri`,
`network.transport` (`pipe` for stdio, `tcp` for HTTP), `error.type` on failure. Trace context travels as
W3C `traceparent` / `tracestate` in `params._meta`, both ways: a host's is the parent of the server span,
and the upstream gets the client span's.

Off by default, and then free: nothing here runs (the front clears the SDK's span middleware, upstream
calls keep their direct path, no span object is made). `nexus.tracing: true` turns spans on: exported over
OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (`install`
gives the gateway a tracer provider of its own), else given to the process's global tracer provider;
`nexus.tracing: {"otlp_endpoint": "http://collector:4318"}` names the collector in the config. The SDK and
the exporter come with `pip install 'nexus-gateway[tracing]'`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.propagate import extract, inject
from opentelemetry.trace import Span, SpanKind, StatusCode

from nexus_gateway import __version__
from nexus_gateway.config import TracingSettings
from nexus_gateway.errors import ConfigError

logger = logging.getLogger(__name__)

TRACER_NAME = "nexus-gateway"
TARGETS = {"tools/call": "gen_ai.tool.name", "prompts/get": "gen_ai.prompt.name"}
"""Methods whose span name carries a target, and the attribute that holds it."""
_provider: trace.TracerProvider | None = None


def endpoint(setting: bool | TracingSettings) -> str | None:
    """Where spans are exported: the config's endpoint, else the OpenTelemetry environment's."""
    if isinstance(setting, TracingSettings) and setting.otlp_endpoint:
        return setting.otlp_endpoint.rstrip("/") + "/v1/traces"
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if traces:
        return traces
    root = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    return root.rstrip("/") + "/v1/traces" if root else None


def install(setting: bool | TracingSettings) -> None:
    """With tracing on and an OTLP endpoint known, a tracer provider of the gateway's own exporting there (once
    per process). The process's global provider is left to the application that embeds the gateway."""
    where = endpoint(setting)
    if not setting or where is None or _provider is not None:
        return
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise ConfigError(
            f"nexus.tracing exports to {where}, which needs the OpenTelemetry SDK: pip install 'nexus-gateway[tracing]'"
        ) from exc
    service = setting.service_name if isinstance(setting, TracingSettings) else "nexus-gateway"
    headers = setting.headers if isinstance(setting, TracingSettings) else None
    provider = TracerProvider(resource=Resource.create({"service.name": service, "service.version": __version__}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=where, headers=headers or None)))
    use_provider(provider)
    logger.info("tracing: spans exported over OTLP/HTTP to %s", where)


def use_provider(provider: trace.TracerProvider | None) -> None:
    """The tracer provider the gateway's spans go to (None: the process's global one). Tests give theirs."""
    global _provider
    _provider = provider


def tracer() -> trace.Tracer:
    return (_provider or trace.get_tracer_provider()).get_tracer(TRACER_NAME, __version__)


def span_name(method: str, target: str | None) -> str:
    return f"{method} {target}" if target and method in TARGETS else method


def attributes(
    method: str,
    target: str | None,
    *,
    request_id: object = None,
    session_id: str | None = None,
    protocol_version: str | None = None,
    transport: str | None = None,
    uri: str | None = None,
    upstream: str | None = None,
) -> dict[str, Any]:
    """The semantic conventions' attributes of one MCP request (and `nexus.upstream`: which upstream a
    client span went to)."""
    found: dict[str, Any] = {"mcp.method.name": method}
    if method == "tools/call":
        found["gen_ai.operation.name"] = "execute_tool"
    if target and method in TARGETS:
        found[TARGETS[method]] = target
    optional = {
        "jsonrpc.request.id": None if request_id is None else str(request_id),
        "mcp.session.id": session_id,
        "mcp.protocol.version": protocol_version,
        "network.transport": transport,
        "mcp.resource.uri": uri,
        "nexus.upstream": upstream,
    }
    found.update({key: value for key, value in optional.items() if value})
    return found


def parent_of(meta: Mapping[str, Any] | None) -> Any:
    """The trace context a request's `_meta` carries (`traceparent`, `tracestate`), or None."""
    if not meta or "traceparent" not in meta:
        return None
    context = extract(meta)
    return context if trace.get_current_span(context).get_span_context().is_valid else None


def failed(span: Span, error: BaseException | str) -> None:
    """Record a failure on `span`: `error.type` (the exception's class, or the given type) and the status."""
    kind = error if isinstance(error, str) else type(error).__qualname__
    span.set_attribute("error.type", kind)
    span.set_status(StatusCode.ERROR, None if isinstance(error, str) else str(error))


@contextmanager
def client_span(
    method: str, target: str | None, meta: Mapping[str, Any] | None, **attrs: Any
) -> Iterator[tuple[Span, dict[str, Any]]]:
    """A CLIENT span for a request to an upstream, and the `_meta` to send with it: `meta` (the host's) with
    this span's `traceparent` / `tracestate` in place of any the host sent."""
    with tracer().start_as_current_span(
        span_name(method, target),
        kind=SpanKind.CLIENT,
        attributes=attributes(method, target, **attrs),
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        carried = {key: value for key, value in (meta or {}).items() if key not in ("traceparent", "tracestate")}
        inject(carried)
        try:
            yield span, carried
        except BaseException as exc:
            failed(span, exc)
            raise
