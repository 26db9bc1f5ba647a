"""Results in the shape every protocol era accepts.

The 2026-07-28 era requires `resultType` on every result and `ttlMs`/`cacheScope` on the cacheable
ones; the handshake era drops fields it does not know. Forwarded upstream results are wire dicts
(the upstream spoke the handshake era), so they get `resultType` here. Every list changes when an
upstream's does and depends on the upstreams this gateway reaches, so results are private and
immediately stale: a modern client lists again rather than trusting a copy.
"""

from __future__ import annotations

from mcp.server.caching import CacheHint
from mcp_types.methods import CacheableMethod

from nexus_gateway.gateway import ToolResult

_FRESH_ONLY = CacheHint(ttl_ms=0, scope="private")

CACHE_HINTS: dict[CacheableMethod, CacheHint] = {
    "tools/list": _FRESH_ONLY,
    "resources/list": _FRESH_ONLY,
    "resources/templates/list": _FRESH_ONLY,
    "resources/read": _FRESH_ONLY,
    "prompts/list": _FRESH_ONLY,
}


def complete(result: ToolResult) -> ToolResult:
    """`result`, marked complete when it is a wire dict without a `resultType` (typed results carry one)."""
    if isinstance(result, dict) and "resultType" not in result:
        return {**result, "resultType": "complete"}
    return result
