"""The local model engine: llama.cpp, compiled KV blocks, and the splicer that puts them into sessions.

llama.py     the only module importing llama_cpp: model and context owners, sequence ops, state I/O
models.py    the registry of packaged models: PyPI parts, size, SHA-256; assembly, fail closed
model.py     which GGUF (a registry name, Qwen2.5-Coder-0.5B by default, or a path), the model fingerprint
prompt.py    the text layout per model family: preamble (every block's anchor), tool text, request
blocks.py    the block file format: header, checksum, atomic write, mmap read, fail-closed validation
store.py     the compiled_schemas/ folder of one model fingerprint
policy.py    splice / recompute / prefill by depth: P, D and the recompute curve
splicer.py   anchored splice, suffix recompute, prefill fallback
compiler.py  tools -> blocks, incrementally
runtime.py   model + context + sessions, synchronous, on one thread
worker.py    that thread, and `LocalEngine`, the async `Engine` the gateway talks to
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from nexus_gateway.catalog import ToolRecord
    from nexus_gateway.engine.splicer import Placement


@dataclass(frozen=True)
class Session:
    """A handle on one engine session (one sequence of the shared context)."""

    id: int


class Engine(Protocol):
    """What the argument generator needs from a model engine."""

    async def open_session(self) -> Session: ...
    async def close_session(self, session: Session) -> None: ...
    async def append(self, session: Session, text: str) -> None: ...
    async def place_tool(self, session: Session, record: ToolRecord, *, form: str = "schema") -> Placement: ...
    async def generate(self, session: Session, max_tokens: int = 128) -> str: ...
