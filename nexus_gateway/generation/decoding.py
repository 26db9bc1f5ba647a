"""Grammar-constrained greedy decoding of one tool call's arguments, run on the engine thread.

    [session history] tool text (signature | block | schema) request ... {"   <- prompt
                                                              city": "Paris"}  <- decoded under the grammar

The tool text and the request are scratch work: the session is rewound to where it was, so only the
turns the caller remembers (sessions.py) make its history grow. The clock starts before the tool text
is placed; the first argument token is the first one the grammar lets through.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import dataclass
from typing import Literal

import numpy as np

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.engine.llama import GrammarSampler
from nexus_gateway.engine.runtime import Runtime, SessionState
from nexus_gateway.engine.splicer import Placement
from nexus_gateway.generation.grammar import GrammarPlan, parse_object

Mode = Literal["signature", "splice", "prefill"]
MODES: tuple[Mode, ...] = ("signature", "splice", "prefill")


@dataclass(frozen=True)
class Decoded:
    text: str
    """The whole JSON text, opening brace included."""
    complete: bool
    placement: Placement | None
    n_tokens: int
    ttft_s: float
    total_s: float


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
        placement = place(rt, state, record, mode)
        request, opened = request_text(rt, query, plan)
        logits = rt.append_text(state, request)
        tokens: list[int] = []
        text, ttft = opened, 0.0
        with GrammarSampler(rt.model, plan.gbnf) as grammar:
            for token in rt.model.tokenize(opened):
                grammar.accept(token)
            while len(tokens) < max_tokens and logits is not None:
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
        return Decoded(text, complete, placement, len(tokens), ttft, time.perf_counter() - started)
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
