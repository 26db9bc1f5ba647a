"""Context cost: tokens a host's model reads for `tools/list`, routed against passthrough, and the
length of compressed signatures, both counted with the default local model's tokenizer."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from typing import Any

from nexus_gateway.catalog.signatures import signature
from nexus_gateway.meta import definitions as meta_tools

Tokenize = Callable[[str], list[int]]


def _count(tokenize: Tokenize, text: str) -> int:
    return len(tokenize(text))


def context_cost(tools: Sequence[dict[str, Any]], tokenize: Tokenize, *, pinned: int = 0) -> dict[str, Any]:
    """`tools` in wire form (name, description, inputSchema), names already namespaced."""
    servers = sorted({t.get("server") or t["name"].split("__", 1)[0] for t in tools})
    passthrough = json.dumps({"tools": list(tools)}, separators=(",", ":"))
    routed = json.dumps(
        {"tools": meta_tools.definitions(len(tools), servers) + list(tools[:pinned])}, separators=(",", ":")
    )
    signatures = [signature(t["name"], t.get("description") or "", t.get("inputSchema")) for t in tools]
    sig_tokens = sorted(_count(tokenize, line) for line in signatures)
    schema_tokens = sorted(_count(tokenize, json.dumps(t, separators=(",", ":"))) for t in tools)
    passthrough_tokens, routed_tokens = _count(tokenize, passthrough), _count(tokenize, routed)
    return {
        "tools": len(tools),
        "servers": len(servers),
        "passthrough_tokens": passthrough_tokens,
        "routed_tokens": routed_tokens,
        "routed_reduction": round(1 - routed_tokens / passthrough_tokens, 4),
        "signature_tokens_median": statistics.median(sig_tokens),
        "signature_tokens_p90": sig_tokens[int(0.9 * (len(sig_tokens) - 1))],
        "signature_tokens_max": sig_tokens[-1],
        "schema_tokens_median": statistics.median(schema_tokens),
    }
