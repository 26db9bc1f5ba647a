"""The local model engine: llama.cpp, compiled KV blocks, and the splicer that puts them into sessions.

This package's own names (below) are what the rest of the gateway uses: `Engine`, the API generation
needs, and its value types. Importing it loads nothing native; llama.cpp loads with `LocalEngine`.

llama.py     the only module importing llama_cpp: model and context owners, sequence ops, state I/O
models.py    the registry of packaged models: PyPI parts, size, SHA-256; assembly, fail closed
model.py     which GGUF (a registry name, Qwen2.5-Coder-0.5B by default, or a path), the model fingerprint
prompt.py    the text layout per model family: preamble (every block's anchor), tool text, request
history.py   session history of a given depth for evals and benchmarks: whole turns, never a cut one
blocks.py    the block file format: header, checksum, atomic write, mmap read, fail-closed validation
store.py     the compiled_schemas/ folder of one model fingerprint
policy.py    splice / recompute / prefill by depth: P, D and the recompute curve
splicer.py   anchored splice, suffix recompute, prefill fallback
compiler.py  tools -> blocks, incrementally
decoding.py  one call's arguments decoded under a grammar, a token at a time
lookahead.py drafts of the next tokens, read off the prompt, checked in the same pass as each token
scoring.py   query likelihood (re-ranking): log P(request | each tool's line), teacher-forced
completion.py  a short text under a grammar, outside the sessions (usage examples of tools)
runtime.py   model + context + sessions, synchronous, on one thread
worker.py    that thread, and `LocalEngine`, the async `Engine`
remote.py    `RemoteEngine`: the `Engine` on an inference server (OpenAI completions API), no model here
backends.py  `open_engine`: the configured backend, local or remote
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, Self

if TYPE_CHECKING:
    from nexus_gateway.catalog import ToolRecord
    from nexus_gateway.config import ToolForm
    from nexus_gateway.engine.splicer import Placement


CLOSING_TOKENS = 96
"""Tokens past the budget in which the grammar must close the object (decoding.py: closing mode)."""
DRAFT_TOKENS = 1
"""The most tokens drafted ahead of a decoding step (lookahead.py); 0 decodes a token a pass. One: on 2 cores
a pass of two tokens takes about as long as a pass of one, and each more token about a third of a pass
(docs/benchmarks.md, session 21: fill time -24 % with 1, -20 % with 2, on the argument development sets)."""


@dataclass(frozen=True)
class Session:
    """A handle on one engine session (one sequence of the shared context)."""

    id: int


@dataclass(frozen=True)
class Turn:
    """One earlier exchange kept in a session (`PromptLayout.turn_text` writes it)."""

    request: str
    arguments: str
    """The arguments, as JSON."""
    result: str | None = None
    """The start of the tool's result, when the tool was called."""


@dataclass(frozen=True, kw_only=True)
class Decoding:
    """How one call's arguments are decoded: the tool shown as `form`, then greedy under the GBNF `grammar`
    after a prompt that ends with `{"` (`opens_key`: the object must have a first key) or `{`."""

    grammar: str
    opens_key: bool
    form: ToolForm
    max_tokens: int
    copy_bias: float = 0.0
    """Logits added to tokens that keep a string value a span of the request (`copying.py`); 0 is off."""
    copied_only: tuple[str, ...] = ()
    """Optional free-text parameters: once a value of theirs stops being a span of the request (case aside),
    it is closed there (it would be left out after decoding)."""
    draft_tokens: int = DRAFT_TOKENS
    """Tokens looked up in the prompt and checked in the same pass as each chosen one (lookahead.py): fewer
    passes over the model, the same output up to rounding."""


@dataclass(frozen=True)
class Decoded:
    """One call's arguments as the model decoded them."""

    text: str
    """The whole JSON text, opening brace included."""
    complete: bool
    placement: Placement | None
    """How the tool text entered the context (None when nothing was decoded)."""
    n_tokens: int
    ttft_s: float
    total_s: float
    closed_early: bool = False
    """The budget ran out and the object was closed in closing mode (values may be cut short)."""
    cut: tuple[str, ...] = ()
    """The optional free-text parameters (`Decoding.copied_only`) whose values were closed where they stopped
    copying the request."""
    passes: int = 0
    """Passes over the model that decoding took: fewer than `n_tokens` where drafts were taken (lookahead.py)."""


@dataclass(frozen=True)
class Likelihoods:
    """How likely a request is after each candidate tool (`scoring.py`): summed log-probabilities of its
    tokens, teacher-forced; higher explains the request better."""

    per_tool: tuple[float, ...]
    """One a candidate, in the order given."""
    without: float
    """The same request after no tool: the baseline a tool has to beat to say anything for it."""
    request_tokens: int
    decoded_tokens: int
    total_s: float


@dataclass(frozen=True)
class Completion:
    """A short text the model wrote for a task of its own (`Engine.complete`)."""

    text: str
    prompt_tokens: int
    decoded_tokens: int
    total_s: float
    model: str
    """The model fingerprint that wrote it."""


ColdSchema = Literal["uncompiled", "deep"]


class Engine(Protocol):
    """What generation (argument filling, client sessions) needs of a model engine: `LocalEngine` (llama.cpp in
    this process; tests and benchmarks reach further with `LocalEngine.run`) or `RemoteEngine` (a server)."""

    async def open_session(self) -> Session: ...
    async def close_session(self, session: Session) -> None: ...
    async def fork_session(self, session: Session) -> Session:
        """A new session holding what `session` holds, for decoding beside it (two candidates of one request:
        their decoding steps share each pass over the model); close it when done. EngineError when no
        session is free."""
        ...

    async def depth(self, session: Session) -> int:
        """Tokens the session holds after the preamble."""
        ...

    async def append_turn(self, session: Session, turn: Turn, *, max_depth: int) -> None:
        """Decode a turn into the session; past `max_depth` tokens it restarts from this turn alone."""
        ...

    async def decode_arguments(self, session: Session, record: ToolRecord, query: str, how: Decoding) -> Decoded:
        """Place the tool, decode the arguments for `query` as `how` says, and leave the session as it was."""
        ...

    async def prepare_blocks(self, records: Sequence[ToolRecord]) -> None:
        """Compile the KV blocks `splice` needs, when the engine keeps blocks (incremental)."""
        ...

    async def cold_schema(self, session: Session, record: ToolRecord) -> ColdSchema | None:
        """Why `record`'s full schema would enter `session` by a full prefill now, which its signature would
        spare: `uncompiled` (no block yet, or no block store), `deep` (the session is deeper than the splice
        policy trusts a splice at, or the schema is longer than the context); None when it would be spliced (or
        the engine prefills cheaply anyway)."""
        ...

    async def prepare_scoring(self, records: Sequence[ToolRecord]) -> int:
        """Compile the re-ranker's blocks of `records` (their scoring text) that are not compiled yet; how
        many were compiled (0 when the engine keeps no blocks)."""
        ...

    async def request_likelihoods(self, records: Sequence[ToolRecord], query: str) -> Likelihoods:
        """How likely `query` is after each of `records` (re-ranking); no session changes."""
        ...

    async def complete(
        self, instruction: str, context: str, query: str, *, grammar: str, max_tokens: int
    ) -> Completion:
        """Write a reply to a task of its own (`PromptLayout.task_text`) under a GBNF grammar, greedily, in a
        sequence taken for it; no session changes. Concurrent calls share each decoding step."""
        ...


class ManagedEngine(Engine, Protocol):
    """An `Engine` that is opened and closed: `async with engine: ...` (`backends.open_engine` makes one)."""

    async def __aenter__(self) -> Self: ...
    async def __aexit__(self, *exc: object) -> None: ...


def schema_grammar(schema: str, prop_order: list[str] | None = None) -> str:
    """GBNF for a JSON Schema (llama.cpp's converter; raises on schemas it cannot express)."""
    from nexus_gateway.engine.llama import schema_to_gbnf

    return schema_to_gbnf(schema, prop_order)
