"""The SERVER span of each request the front serves (nexus.tracing on; nexus_gateway/tracing.py).

It takes the place of the SDK's own span middleware, adding what the gateway knows and the SDK does not:
`mcp.session.id` (the streamable-HTTP session) and `network.transport` (`tcp` under HTTP, `pipe` on
stdio). The host's trace context in `params._meta` is the span's parent; a tool result with `isError` is a
failed span (`error.type` `tool_error`), as is a JSON-RPC error (its code).
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from opentelemetry.trace import SpanKind

from nexus_gateway import tracing


def _session_id(ctx: ServerRequestContext[Any, Any]) -> str | None:
    headers = getattr(ctx.request, "headers", None)
    if headers is None:
        return None
    value = headers.get("mcp-session-id")
    return str(value) if value else None


def _is_error(result: HandlerResult) -> bool:
    if isinstance(result, dict):
        return result.get("isError") is True
    return getattr(result, "is_error", False) is True


class TracingMiddleware:
    """A span per request, named and attributed after the MCP semantic conventions."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params = ctx.params or {}
        name = params.get("name")
        target = name if isinstance(name, str) else None
        uri = params.get("uri")
        attributes = tracing.attributes(
            ctx.method,
            target,
            request_id=ctx.request_id,
            session_id=_session_id(ctx),
            protocol_version=ctx.protocol_version,
            transport="tcp" if ctx.request is not None else "pipe",
            uri=uri if isinstance(uri, str) else None,
        )
        meta = ctx.meta if isinstance(ctx.meta, dict) else params.get("_meta")
        with tracing.tracer().start_as_current_span(
            tracing.span_name(ctx.method, target),
            kind=SpanKind.SERVER,
            attributes=attributes,
            context=tracing.parent_of(meta if isinstance(meta, dict) else None),
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                result = await call_next(ctx)
            except MCPError as exc:
                span.set_attribute("rpc.response.status_code", str(exc.error.code))
                tracing.failed(span, str(exc.error.code))
                raise
            except Exception as exc:
                tracing.failed(span, exc)
                raise
            if ctx.method == "tools/call" and _is_error(result):
                tracing.failed(span, "tool_error")
            return result
