"""The engine's synchronous core, run on the worker thread: one model, one context, sessions as sequences.

Sequence ids: sessions come first; then up to `SCORING_SEQUENCES` for the re-ranker (`scoring.py`: copies of
the preamble, one a candidate while it scores, so it never takes a client's session); `n_seq_max - 2` holds the
preamble once (every session starts as a copy of it, sharing its cells); `n_seq_max - 1` is the splicer's and
compiler's scratch.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.engine import ColdSchema, Turn
from nexus_gateway.engine.blocks import block_key
from nexus_gateway.engine.llama import ContextSettings, LlamaContext, LlamaModel
from nexus_gateway.engine.model import ModelFile, fingerprint, resolve_model
from nexus_gateway.engine.models import shipped_policy
from nexus_gateway.engine.policy import SplicePolicy, load_policy
from nexus_gateway.engine.prompt import PromptLayout, layout_for, tool_line, tool_text
from nexus_gateway.engine.settings import EngineSettings
from nexus_gateway.engine.splicer import Placement, Splicer
from nexus_gateway.engine.store import BlockStore
from nexus_gateway.errors import EngineError

logger = logging.getLogger(__name__)

SCORING_SEQUENCES = 6
"""Sequences the re-ranker scores in at once: the default five candidates and the request after no tool."""


@dataclass
class SessionState:
    seq: int
    n_past: int
    logits: np.ndarray | None = field(default=None, repr=False)
    """Next-token logits after the last decode that asked for them."""


class Runtime:
    def __init__(
        self,
        model: LlamaModel,
        ctx: LlamaContext,
        *,
        model_file: ModelFile,
        compiled_root: Path | None,
        policy: SplicePolicy | None = None,
        layout: PromptLayout | None = None,
    ) -> None:
        if ctx.settings.n_seq_max < 4:
            raise EngineError(
                "the engine needs n_seq_max >= 4 (one session, a scorer's, the preamble, a scratch sequence)"
            )
        self.model, self.ctx, self.model_file = model, ctx, model_file
        self.layout = layout or layout_for(model.info.architecture, model.info.chat_template)
        self.fingerprint = fingerprint(model_file, ctx.settings.kv_layout())
        self.store = BlockStore(compiled_root, self.fingerprint) if compiled_root is not None else None
        if policy is None:
            shipped = shipped_policy(model_file.sha256)
            policy = load_policy(self.store.directory, shipped) if self.store else shipped
        self.preamble = model.tokenize(self.layout.preamble, bos=True, special=True)
        self.anchor = len(self.preamble)
        self.scratch = ctx.settings.n_seq_max - 1
        self.template = ctx.settings.n_seq_max - 2
        scorers = max(1, min(SCORING_SEQUENCES, ctx.settings.n_seq_max - 3))
        self.scoring = tuple(range(self.template - scorers, self.template))
        """The re-ranker's sequences (after the sessions'): each holds one candidate while a request is scored."""
        self.splicer = Splicer(ctx, self.store, policy, scratch=self.scratch, anchor=self.anchor)
        self._free = self._all_sessions()
        self._sessions: dict[int, SessionState] = {}
        ctx.decode(self.template, self.preamble, 0, logits=False)

    @classmethod
    def load(cls, settings: EngineSettings, *, compiled_root: Path | None) -> Runtime:
        model_file = resolve_model(settings.model)
        context = ContextSettings(
            n_ctx=settings.n_ctx,
            n_batch=settings.n_batch,
            n_seq_max=settings.sessions + SCORING_SEQUENCES + 2,
            threads=settings.threads,
            decode_threads=settings.decode_threads,
            flash_attn=settings.flash_attn,
            kv_type=settings.kv_type,
        )
        model = LlamaModel(model_file.path, gpu_layers=settings.gpu_layers)
        ctx: LlamaContext | None = None
        try:
            ctx = LlamaContext(model, context)
            runtime = cls(model, ctx, model_file=model_file, compiled_root=compiled_root)
        except BaseException:
            if ctx is not None:
                ctx.close()
            model.close()
            raise
        logger.info(
            "engine: %s (%s), n_ctx %d, %d sessions",
            model_file.label,
            model.info.description,
            ctx.n_ctx,
            settings.sessions,
        )
        return runtime

    @property
    def policy(self) -> SplicePolicy:
        return self.splicer.policy

    def _all_sessions(self) -> list[int]:
        """Every session's sequence, the one to take first last."""
        return list(range(self.scoring[0] - 1, -1, -1))

    def open_session(self) -> SessionState:
        if not self._free:
            raise EngineError(f"all {self.scoring[0]} engine sessions are in use; raise nexus.engine.sessions")
        seq = self._free.pop()
        self.ctx.seq_rm(seq)
        self.ctx.seq_cp(self.template, seq)
        state = SessionState(seq=seq, n_past=self.anchor)
        self._sessions[seq] = state
        return state

    def fork_session(self, state: SessionState) -> SessionState:
        """A new session holding what `state` holds (its cells shared, not copied: the cache is unified), so a
        second tool can be decoded beside the first for the same request; close it like any session."""
        fork = self.open_session()
        self.ctx.seq_rm(fork.seq)
        self.ctx.seq_cp(state.seq, fork.seq)
        fork.n_past = state.n_past
        return fork

    def session_open(self, seq: int) -> SessionState | None:
        """The open session of sequence `seq`, if any."""
        return self._sessions.get(seq)

    @property
    def free_sessions(self) -> int:
        return len(self._free)

    def session(self, seq: int) -> SessionState:
        state = self._sessions.get(seq)
        if state is None:
            raise EngineError(f"engine session {seq} is not open")
        return state

    def close_session(self, state: SessionState) -> None:
        if self._sessions.pop(state.seq, None) is not None:
            self.ctx.seq_rm(state.seq)
            self._free.append(state.seq)

    def append(self, state: SessionState, tokens: list[int], *, logits: bool = True) -> np.ndarray | None:
        out = self.ctx.decode(state.seq, tokens, state.n_past, logits=logits)
        state.n_past += len(tokens)
        state.logits = out
        return out

    def append_each(self, steps: Sequence[tuple[SessionState, Sequence[int]]]) -> list[np.ndarray]:
        """Tokens for each of several sessions, decoded together; for each, the next-token logits after every
        one of its tokens (a row per token)."""
        if len({state.seq for state, _ in steps}) != len(steps):
            raise ValueError("append_each takes at most one step per session")
        outs = self.ctx.decode_each([(state.seq, tokens, state.n_past) for state, tokens in steps])
        for (state, tokens), out in zip(steps, outs, strict=True):
            state.n_past += len(tokens)
            state.logits = out[-1]
        return outs

    def append_text(self, state: SessionState, text: str, *, logits: bool = True) -> np.ndarray | None:
        return self.append(state, self.model.tokenize(text, special=True), logits=logits)

    def depth(self, state: SessionState) -> int:
        """Tokens the session holds after the preamble."""
        return state.n_past - self.anchor

    def append_turn(self, state: SessionState, turn: Turn, *, max_depth: int) -> None:
        """Decode an earlier exchange into the session; when that would pass `max_depth`, start again from
        the preamble with this turn only (its last `max_depth` tokens)."""
        tokens = self.model.tokenize(self.layout.turn_text(turn), special=True)
        if self.depth(state) + len(tokens) > max_depth:
            self.rewind(state, self.anchor)
        self.append(state, tokens[-max_depth:], logits=False)

    def tool_tokens(self, record: ToolRecord) -> tuple[list[int], str]:
        """Token ids and block key of a tool's full text."""
        return self._tokens_and_key(tool_text(record))

    def line_tokens(self, record: ToolRecord) -> tuple[list[int], str]:
        """Token ids and block key of a tool's line (`prompt.tool_line`: the re-ranker's and the
        signature-form fill's; one block serves both)."""
        return self._tokens_and_key(tool_line(record))

    def _tokens_and_key(self, text: str) -> tuple[list[int], str]:
        return self.model.tokenize(text), block_key(self.layout.preamble, text)

    def cold_schema(self, state: SessionState, record: ToolRecord) -> ColdSchema | None:
        """Why `record`'s full schema would enter `state` by a full prefill (Engine.cold_schema), or None. Depth
        first: a session too deep to splice into would not use the block, so its absence is not reported."""
        tokens, key = self.tool_tokens(record)
        too_long = self.anchor + len(tokens) >= self.ctx.n_ctx  # no block is ever compiled for it
        if too_long or self.splicer.policy.decide(state.n_past - self.anchor, len(tokens)).mode == "prefill":
            return "deep"
        if self.store is None or not self.store.path_for(key).is_file():
            return "uncompiled"
        return None

    def place_tool(self, state: SessionState, record: ToolRecord, *, form: str = "schema") -> Placement:
        """Add a tool to the session through the splicer: its full schema, or (`form="signature"`) its line,
        whose block the re-ranker compiled (spliced where the policy allows, else prefilled)."""
        tokens, key = self.line_tokens(record) if form == "signature" else self.tool_tokens(record)
        placement = self.splicer.place(state.seq, state.n_past, tokens, key)
        state.n_past += len(tokens)
        state.logits = None
        return placement

    def prefill_tool(self, state: SessionState, record: ToolRecord) -> Placement:
        """Add a tool's full schema text by plain prefill, whatever the depth policy says (the baseline)."""
        tokens, _ = self.tool_tokens(record)
        placement = self.splicer.prefill(state.seq, state.n_past, tokens, reason="prefill mode")
        state.n_past += len(tokens)
        state.logits = None
        return placement

    def rewind(self, state: SessionState, n_past: int) -> None:
        """Drop everything the session holds from position `n_past` on (a turn's scratch work)."""
        if n_past < state.n_past and not self.ctx.seq_rm(state.seq, n_past, -1):
            raise EngineError(f"could not drop positions from {n_past} of sequence {state.seq}")
        state.n_past = min(state.n_past, n_past)
        state.logits = None

    def greedy(self, state: SessionState, max_tokens: int) -> list[int]:
        """Greedy continuation from the session's last logits, stopping after an end-of-turn token."""
        if state.logits is None:
            raise EngineError("nothing to continue from: decode a request first")
        out: list[int] = []
        while len(out) < max_tokens:
            token = int(np.argmax(state.logits))
            out.append(token)
            if self.model.is_end(token) or len(out) == max_tokens:
                break
            self.append(state, [token])
        return out

    def compile_tokens(self, tokens: list[int]) -> bytes:
        """Decode `tokens` right after the preamble in the scratch sequence and return its saved state
        without the preamble's cells: the payload of a block anchored at `self.anchor`."""
        scratch = self.scratch
        self.ctx.seq_rm(scratch)
        self.ctx.seq_cp(self.template, scratch)
        try:
            self.ctx.decode(scratch, tokens, self.anchor, logits=False)
            self.ctx.seq_rm(scratch, 0, self.anchor)
            return self.ctx.save_seq(scratch)
        finally:
            self.ctx.seq_rm(scratch)

    def reset(self) -> None:
        """Close every session and empty the cache, back to the state right after loading."""
        self._sessions.clear()
        self._free = self._all_sessions()
        self.ctx.clear()
        self.ctx.decode(self.template, self.preamble, 0, logits=False)

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
        self.ctx.close()
        self.model.close()
