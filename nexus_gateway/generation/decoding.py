"""Grammar-constrained greedy decoding of one tool call's arguments, run on the engine thread.

    [session history] tool text (signature | block | schema) request ... {"   <- prompt
                                                              city": "Paris"}  <- decoded under the grammar

The tool text and the request are scratch work: the session is rewound to where it was, so only the
turns the caller remembers (sessions.py) make its history grow. The clock starts before the tool text
is placed; the first argument token is the first one the grammar lets through.

When the token budget runs out before the object is complete, decoding goes on in closing mode: of the
tokens the grammar allows, those made of closing characters (`"`, `]`, `}`, and spaces) come first, so
the open string, array and object are closed and the required keys still missing are written with the
shortest values the grammar admits. The result is valid JSON that the grammar accepts, never a cut-off
text; only a grammar that cannot close within `CLOSING_TOKENS` more tokens gives an incomplete result.
"""

from __future__ import annotations

import itertools
import time
import weakref
from collections.abc import Generator
from dataclasses import dataclass
from typing import Literal

import numpy as np

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.engine.llama import GrammarSampler, LlamaModel
from nexus_gateway.engine.runtime import Runtime, SessionState
from nexus_gateway.engine.splicer import Placement
from nexus_gateway.generation.grammar import GrammarPlan, parse_object

Mode = Literal["signature", "splice", "prefill"]
MODES: tuple[Mode, ...] = ("signature", "splice", "prefill")
CLOSING_TOKENS = 96
"""Tokens past the budget in which the grammar must close the object (closing mode)."""
_CLOSING_BOOST = 1e4
_closers: weakref.WeakKeyDictionary[LlamaModel, np.ndarray] = weakref.WeakKeyDictionary()


def closing_tokens(model: LlamaModel) -> np.ndarray:
    """Ids of the single tokens spelled with `"`, `]`, `}` and spaces, not spaces alone (`"}`, ` ]`, ...)."""
    ids = _closers.get(model)
    if ids is None:
        found = set()
        for length in range(1, 5):
            for chars in itertools.product('"]} ', repeat=length):
                text = "".join(chars)
                tokens = model.tokenize(text)
                if len(tokens) == 1 and text.strip():  # spaces alone would pad an open string forever
                    found.add(tokens[0])
        ids = _closers[model] = np.array(sorted(found), dtype=np.int64)
    return ids


@dataclass(frozen=True)
class Decoded:
    text: str
    """The whole JSON text, opening brace included."""
    complete: bool
    placement: Placement | None
    n_tokens: int
    ttft_s: float
    total_s: float
    closed_early: bool = False
    """The budget ran out and the object was closed in closing mode (values may be cut short)."""


def place(rt: Runtime, state: SessionState, record: ToolRecord, mode: Mode) -> Placement:
    if mode == "signature":
        return rt.place_tool(state, record, form="signature")
    if mode == "splice":
        return rt.place_tool(state, record)
    return rt.prefill_tool(state, record)


def request_text(rt: Runtime, query: str, plan: GrammarPlan) -> tuple[str, str]:
    """The request as decoded and the JSON it has already opened: `{"` when a key must come, else `{`."""
    text = rt.layout.request_text(query)
    if not text.endswith('{"'):
        text += '{"'
    return (text, '{"') if plan.opens_key else (text[:-1], "{")


Step = tuple[SessionState, int]
"""A decoding step asked of whoever drives `decode_steps`: decode this token into this session."""


def decode_steps(
    rt: Runtime, state: SessionState, record: ToolRecord, query: str, plan: GrammarPlan, mode: Mode, max_tokens: int
) -> Generator[Step, np.ndarray, Decoded]:
    """The decoding of one call's arguments, a token at a time: yields each chosen token (with its session)
    and is sent the next-token logits back. The tool text and the request are prefilled directly. The
    driver is either `decode_arguments` (alone) or the engine worker, which decodes the steps of every
    concurrent session in one batch (`Runtime.append_each`)."""
    started = time.perf_counter()
    mark = state.n_past
    placement = None
    try:
        if plan.empty:
            return Decoded("{}", True, None, 0, 0.0, 0.0)
        closers = closing_tokens(rt.model)
        placement = place(rt, state, record, mode)
        request, opened = request_text(rt, query, plan)
        logits = rt.append_text(state, request)
        tokens: list[int] = []
        text, ttft = opened, 0.0
        with GrammarSampler(rt.model, plan.gbnf) as grammar:
            for token in rt.model.tokenize(opened):
                grammar.accept(token)
            while len(tokens) < max_tokens + CLOSING_TOKENS and logits is not None:
                if len(tokens) >= max_tokens:  # closing mode: closing characters first
                    logits = logits.copy()
                    logits[closers] += _CLOSING_BOOST
                choice = grammar.choose(logits)
                if choice is None or rt.model.is_end(choice):
                    break
                token = choice
                if not tokens:
                    ttft = time.perf_counter() - started
                grammar.accept(token)
                tokens.append(token)
                text = opened + rt.model.detokenize(tokens)
                if parse_object(text) is not None:
                    break
                logits = yield state, token
        complete = parse_object(text) is not None
        elapsed = time.perf_counter() - started
        return Decoded(text, complete, placement, len(tokens), ttft, elapsed, closed_early=len(tokens) > max_tokens)
    finally:
        rt.rewind(state, mark)


def decode_arguments(
    rt: Runtime, state: SessionState, record: ToolRecord, query: str, plan: GrammarPlan, mode: Mode, max_tokens: int
) -> Decoded:
    """`decode_steps` driven alone: each step decoded as it comes."""
    steps = decode_steps(rt, state, record, query, plan, mode, max_tokens)
    try:
        step = next(steps)
        while True:
            step = steps.send(rt.append_each([step])[0])
    except StopIteration as done:
        return done.value
