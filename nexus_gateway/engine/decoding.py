"""Grammar-constrained greedy decoding of one tool call's arguments, run on the engine thread.

    [session history] tool text (signature | block | schema) request ... {"   <- prompt
                                                              city": "Paris"}  <- decoded under the grammar

The tool text and the request are scratch work: the session is rewound to where it was, so only the
turns the caller keeps (`Runtime.append_turn`) make its history grow. The clock starts before the tool
text is placed; the first argument token is the first one the grammar lets through.

When the token budget runs out before the object is complete, decoding goes on in closing mode: of the
tokens the grammar allows, those made of closing characters (`"`, `]`, `}`, and spaces) come first, so
the open string, array and object are closed and the required keys still missing are written with the
shortest values the grammar admits. The result is valid JSON that the grammar accepts, never a cut-off
text; only a grammar that cannot close within `CLOSING_TOKENS` more tokens gives an incomplete result.

A value of an optional free-text parameter (`Decoding.copied_only`) that stops being a span of the request
is closed at once (its closing quote first): it is left out after decoding (grounding's `invented_optional`),
so writing the rest of it is time spent for nothing (`"commit_title": "Merge pull request #57 from ..."`);
decoding goes on after it as before, so a value the request does state that comes later is still written
(`"merge_method": "squash"`).
"""

from __future__ import annotations

import itertools
import json
import time
import weakref
from collections.abc import Generator

import numpy as np

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.config import ToolForm
from nexus_gateway.engine import CLOSING_TOKENS, Decoded, Decoding
from nexus_gateway.engine.copying import CopyBias
from nexus_gateway.engine.llama import GrammarSampler, LlamaModel
from nexus_gateway.engine.lookahead import Lookahead, followers
from nexus_gateway.engine.prompt import tool_line, tool_text
from nexus_gateway.engine.runtime import Runtime, SessionState
from nexus_gateway.engine.splicer import Placement

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


def place(rt: Runtime, state: SessionState, record: ToolRecord, form: ToolForm) -> Placement:
    if form == "signature":
        return rt.place_tool(state, record, form="signature")
    if form == "splice":
        return rt.place_tool(state, record)
    return rt.prefill_tool(state, record)


def request_text(rt: Runtime, query: str, opens_key: bool) -> tuple[str, str]:
    """The request as decoded and the JSON it has already opened: `{"` when a key must come, else `{`."""
    text = rt.layout.request_text(query)
    if not text.endswith('{"'):
        text += '{"'
    return (text, '{"') if opens_key else (text[:-1], "{")


def _is_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


Step = tuple[SessionState, list[int]]
"""A decoding step asked of whoever drives `decode_steps`: decode these tokens into this session (the chosen
one and the draft after it) and send back the logits after each."""


def tool_tokens(rt: Runtime, record: ToolRecord, form: ToolForm) -> list[int]:
    """The tokens of the tool text in `form`, as the lookahead reads them (`Lookahead.prompt`)."""
    return rt.model.tokenize(tool_line(record) if form == "signature" else tool_text(record))


def decode_steps(
    rt: Runtime, state: SessionState, record: ToolRecord, query: str, how: Decoding
) -> Generator[Step, np.ndarray, Decoded]:
    """The decoding of one call's arguments: yields each chosen token (with its session and a draft of the
    tokens likely to follow it: lookahead.py) and is sent the next-token logits after each. A drafted
    token is taken only when it is the token chosen from the logits before it; the first that is not is
    dropped with the rest of its draft (their cells removed), so the output is what decoding a token at a
    time gives, up to rounding (lookahead.py). The tool text and the request are prefilled directly. The
    engine worker drives it, decoding the steps of every concurrent session in one batch
    (`Runtime.append_each`)."""
    started = time.perf_counter()
    mark = state.n_past
    try:
        closers = closing_tokens(rt.model)
        quote = rt.model.tokenize('"')
        copying = CopyBias(rt.model, query, how.copy_bias)
        placement = place(rt, state, record, how.form)
        request, opened = request_text(rt, query, how.opens_key)
        asked = rt.model.tokenize(request, special=True)
        memory = followers(rt.model)
        prompt = [*tool_tokens(rt, record, how.form), *asked]
        lookahead = Lookahead(rt.model, query, prompt, limit=how.draft_tokens, memory=memory)
        opening = rt.model.tokenize(opened)
        logits = rt.append(state, asked)
        tokens: list[int] = []
        ahead: list[tuple[int, np.ndarray]] = []  # drafted tokens already decoded, each with the logits after it
        text, ttft, cut, cutting, passes = opened, 0.0, [], False, 0
        with GrammarSampler(rt.model, how.grammar) as sampler:
            for token in opening:
                sampler.accept(token)
            while len(tokens) < how.max_tokens + CLOSING_TOKENS and logits is not None:
                if cutting:  # an optional free text that strays from the request: its closing quote first
                    logits = logits.copy()
                    logits[quote] += _CLOSING_BOOST
                elif len(tokens) >= how.max_tokens:  # closing mode: closing characters first
                    logits = logits.copy()
                    logits[closers] += _CLOSING_BOOST
                else:
                    logits = copying.apply(text, logits)
                choice = sampler.choose(logits)
                if choice is None or rt.model.is_end(choice):
                    break
                token = choice
                if not tokens:
                    ttft = time.perf_counter() - started
                sampler.accept(token)
                tokens.append(token)
                text = opened + rt.model.detokenize(tokens)
                if _is_object(text):
                    break
                stray = copying.strays(text, how.copied_only)
                if stray is not None and not cutting:
                    cut.append(stray)
                cutting = stray is not None
                if ahead and ahead[0][0] == token:  # the draft's next token is the one chosen: already decoded
                    logits = ahead.pop(0)[1]
                    continue
                if ahead:  # the draft went another way: its cells go
                    rt.rewind(state, state.n_past - len(ahead))
                    ahead = []
                draft = lookahead.draft([*opening, *tokens], text)
                rows = yield state, [token, *draft]
                passes += 1
                logits, ahead = rows[0], list(zip(draft, rows[1:], strict=True))
        memory.learn([*opening, *tokens])
        elapsed = time.perf_counter() - started
        closed_early = len(tokens) > how.max_tokens
        return Decoded(
            text,
            _is_object(text),
            placement,
            len(tokens),
            ttft,
            elapsed,
            closed_early=closed_early,
            cut=tuple(cut),
            passes=passes,
        )
    finally:
        rt.rewind(state, mark)
