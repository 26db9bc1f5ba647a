"""The KV-block compiler: every tool's full text decoded once after the preamble and saved as a block.

Incremental: a tool whose block exists and validates (same text, model, layout, tokens) is skipped; a
block that fails validation is logged and compiled again. Runs on the engine worker thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.engine.runtime import Runtime
from nexus_gateway.errors import BlockRejected, EngineError

logger = logging.getLogger(__name__)

Progress = Callable[[ToolRecord, str], None]
"""Called after each tool with its outcome: "compiled", "skipped", "too long"."""


@dataclass(frozen=True)
class CompileReport:
    compiled: int
    skipped: int
    replaced: int
    """Blocks that failed validation and were compiled again."""
    too_long: int
    tokens: int
    bytes: int
    seconds: float
    directory: Path | None


def compile_tools(runtime: Runtime, records: Iterable[ToolRecord], progress: Progress | None = None) -> CompileReport:
    store = runtime.store
    if store is None:
        raise EngineError("the engine has no compiled_schemas folder to compile into")
    compiled = skipped = replaced = too_long = tokens_written = bytes_written = 0
    started = time.perf_counter()
    room = runtime.ctx.n_ctx - runtime.anchor
    for record in records:
        tokens, key = runtime.tool_tokens(record)
        outcome = "compiled"
        try:
            if store.get(key, tokens=tokens, anchor=runtime.anchor) is not None:
                outcome = "skipped"
        except BlockRejected as exc:
            logger.warning("%s; compiling it again", exc)
            replaced += 1
        if outcome == "compiled" and len(tokens) > room:
            logger.warning("tool %s is %d tokens, more than the context holds; not compiled", record.name, len(tokens))
            outcome = "too long"
        if outcome == "compiled":
            payload = runtime.compile_tokens(tokens)
            path = store.write(key, runtime.anchor, tokens, payload)
            compiled += 1
            tokens_written += len(tokens)
            bytes_written += path.stat().st_size
        elif outcome == "skipped":
            skipped += 1
        else:
            too_long += 1
        if progress is not None:
            progress(record, outcome)
    return CompileReport(
        compiled,
        skipped,
        replaced,
        too_long,
        tokens_written,
        bytes_written,
        time.perf_counter() - started,
        store.directory,
    )
