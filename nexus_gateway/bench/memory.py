"""`bench memory`: what compiled blocks cost per token, and resident memory as sessions share them.

Blocks: each tool's schema text compiled once (`compile_tools`); bytes per token is the block payload
(llama.cpp's saved sequence state: keys and values of every layer) over its tokens. Sessions: one fresh
process per session count loads the engine, and every session splices the same blocks (the block files
are mmapped once; `ttft.memory`); the report gives RSS and its ratio to the one-session process.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nexus_gateway.bench._cases import BenchCase
from nexus_gateway.bench.ttft import memory
from nexus_gateway.engine.blocks import open_block
from nexus_gateway.engine.compiler import compile_tools
from nexus_gateway.engine.runtime import Runtime
from nexus_gateway.engine.settings import EngineSettings
from nexus_gateway.errors import EngineError


def block_sizes(runtime: Runtime, cases: Sequence[BenchCase]) -> dict[str, Any]:
    """Compile the cases' tools (incremental) and measure their blocks: tokens, bytes, bytes per token."""
    store = runtime.store
    if store is None:
        raise EngineError("the memory benchmark needs a compiled_schemas folder")
    compile_tools(runtime, [case.record for case in cases])
    tokens_total = bytes_total = 0
    for case in cases:
        tokens, key = runtime.tool_tokens(case.record)
        block = open_block(store.path_for(key), fingerprint=runtime.fingerprint, key=key, tokens=tokens)
        try:
            tokens_total += len(tokens)
            bytes_total += block.payload_length
        finally:
            block.close()
    return {
        "model": runtime.model_file.label,
        "kv_type": runtime.ctx.settings.kv_type,
        "blocks": len(cases),
        "block_tokens": tokens_total,
        "block_bytes": bytes_total,
        "block_bytes_per_token": round(bytes_total / tokens_total, 1) if tokens_total else None,
    }


def session_memory(
    settings: EngineSettings, root: Path, cases: Sequence[BenchCase], counts: Sequence[int]
) -> dict[str, Any]:
    """RSS with each session count (fresh processes), the blocks of `cases` spliced into every session."""
    rows = memory(settings, root, cases, counts)
    most = max(rows, key=lambda row: row["sessions"])
    return {"sessions": rows, f"ratio_{most['sessions']}_to_1": most["ratio_to_one_session"]}
