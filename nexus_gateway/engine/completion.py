"""A short text written under a grammar, outside every client's session, run on the engine thread.

    <bos> task prompt (PromptLayout.task_text: instruction, context, request) | reply decoded under the grammar

Used for text the gateway writes about its tools at index time (usage examples): the prompt is a whole task
of its own (no preamble, no session history), decoded from position 0 in a sequence taken for the job and
freed after it. The reply is greedy under the GBNF `grammar`; past `max_tokens` it stops where it is (the
caller salvages what is complete). As a stepped job its tokens share each batched decode with every other
stepped job (other completions, argument decoding), so several tools are written in one pass over the weights.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Generator

import numpy as np

from nexus_gateway.engine import Completion
from nexus_gateway.engine.decoding import Step
from nexus_gateway.engine.llama import GrammarSampler
from nexus_gateway.engine.runtime import Runtime, SessionState
from nexus_gateway.errors import EngineError

_SPLIT = "\x00"
_held: weakref.WeakKeyDictionary[Runtime, tuple[list[int], SessionState]] = weakref.WeakKeyDictionary()
"""Per runtime, the last task's shared beginning (the prompt up to the context) decoded in a sequence kept
for it: each completion of the same task copies its cells instead of decoding it again."""


def _prompt(rt: Runtime, instruction: str, context: str, query: str) -> tuple[list[int], list[int]]:
    """The task prompt's tokens in two parts: what every completion of this instruction shares, and the rest."""
    head, _, tail = rt.layout.task_text(instruction, _SPLIT, query).partition(_SPLIT)
    shared = rt.model.tokenize(head, bos=True, special=True)
    return shared, rt.model.tokenize(context + tail, special=True)


def _start(rt: Runtime, state: SessionState, shared: list[int], rest: list[int]) -> np.ndarray | None:
    """Fill `state` with the prompt (the shared part copied from the held sequence when there is one)."""
    held = _held.get(rt)
    if held is not None and (held[0] != shared or rt.session_open(held[1].seq) is not held[1]):
        if rt.session_open(held[1].seq) is held[1]:
            rt.close_session(held[1])
        del _held[rt]
        held = None
    if held is None and rt.free_sessions > 1:  # one sequence kept for the shared part, never the last free one
        holder = rt.open_session()
        rt.rewind(holder, 0)
        rt.append(holder, shared, logits=False)
        held = _held[rt] = (shared, holder)
    rt.rewind(state, 0)  # a task of its own: not after the argument-filling preamble
    if held is None:
        return rt.append(state, shared + rest)
    rt.ctx.seq_cp(held[1].seq, state.seq)
    state.n_past = len(shared)
    return rt.append(state, rest)


def complete_steps(
    rt: Runtime, instruction: str, context: str, query: str, grammar: str, max_tokens: int
) -> Generator[Step, np.ndarray, Completion]:
    """The completion, a token at a time (yields each chosen token with its sequence, is sent the logits after it)."""
    started = time.perf_counter()
    state = rt.open_session()
    try:
        shared, rest = _prompt(rt, instruction, context, query)
        if len(shared) + len(rest) + max_tokens >= rt.ctx.n_ctx:
            raise EngineError(f"a completion prompt of {len(shared) + len(rest)} tokens does not fit the context")
        logits = _start(rt, state, shared, rest)
        prompt = shared + rest
        tokens: list[int] = []
        with GrammarSampler(rt.model, grammar) as sampler:
            while len(tokens) < max_tokens and logits is not None:
                choice = sampler.choose(logits)
                if choice is None or rt.model.is_end(choice):
                    break
                sampler.accept(choice)
                tokens.append(choice)
                logits = (yield state, [choice])[-1]
        text = rt.model.detokenize(tokens)
        return Completion(text, len(prompt), len(tokens), time.perf_counter() - started, rt.fingerprint)
    finally:
        rt.close_session(state)
