"""One constrained choice, decoded on the engine thread in a prompt of its own (re-ranking).

    <bos> instruction, options (system turn) request (user turn)   <- prompt (PromptLayout.task_text)
    time__get_current_time                                          <- greedy under the replies' grammar

The grammar admits exactly the given replies. Decoding stops as soon as the text so far is the start
of one reply only: the grammar would force the rest, so it is not decoded token by token. The prompt
is decoded in the scratch sequence from position 0, so no session changes; what follows the
instruction is dropped afterwards and the instruction stays, to be reused by the next choice with the
same instruction (the splicer and the compiler empty the scratch sequence before they use it, and the
check that it still holds positions 0 .. n-1 only sees the instruction). It runs as one job: the
concurrent sessions' decoding waits for it (a prompt and a few tokens).
"""

from __future__ import annotations

import json
import time
import weakref
from collections.abc import Sequence

from nexus_gateway.engine import Choosing, Chosen
from nexus_gateway.engine.llama import GrammarSampler
from nexus_gateway.engine.runtime import Runtime
from nexus_gateway.errors import EngineError


def reply_grammar(replies: Sequence[str]) -> str:
    """GBNF admitting exactly one of `replies` (JSON string escapes are a subset of GBNF's)."""
    if not replies:
        raise ValueError("a choice needs at least one reply")
    return "root ::= " + " | ".join(json.dumps(reply, ensure_ascii=False) for reply in dict.fromkeys(replies)) + "\n"


_SPLIT = "\x00"
_kept: weakref.WeakKeyDictionary[Runtime, list[int]] = weakref.WeakKeyDictionary()
"""The instruction's tokens each runtime's scratch sequence holds from position 0."""


def _instruction_tokens(rt: Runtime, how: Choosing) -> list[int]:
    head = rt.layout.task_text(how.instruction, _SPLIT, how.query).split(_SPLIT)[0]
    return rt.model.tokenize(head, bos=True, special=True)


def _reusable(rt: Runtime, seq: int, prompt: list[int]) -> int:
    """How many of `prompt`'s first tokens the scratch sequence already holds (the instruction, or none)."""
    kept = _kept.get(rt)
    if kept and prompt[: len(kept)] == kept and rt.ctx.seq_range(seq) == (0, len(kept) - 1):
        return len(kept)
    _kept.pop(rt, None)
    rt.ctx.seq_rm(seq)
    return 0


def _settled(text: str, replies: Sequence[str], *, ended: bool) -> str | None:
    """The reply `text` has settled on: the only one it starts, or (the model ended) the one it equals."""
    if ended:
        return text if text in replies else None
    started = [reply for reply in replies if reply.startswith(text)]
    return started[0] if len(started) == 1 else None


def choose(rt: Runtime, how: Choosing) -> Chosen:
    """The greedy reply to `how` among its `replies`, decoded in the scratch sequence."""
    started = time.perf_counter()
    prompt = rt.model.tokenize(rt.layout.task_text(how.instruction, how.options, how.query), bos=True, special=True)
    room = rt.ctx.n_ctx - how.max_tokens
    if len(prompt) > room:
        raise EngineError(f"the choice's prompt is {len(prompt)} tokens, more than the context's {room}: show fewer")
    seq = rt.scratch
    head = _instruction_tokens(rt, how)
    if prompt[: len(head)] != head or len(head) >= len(prompt):
        head = []
    reused = _reusable(rt, seq, prompt)
    tokens: list[int] = []
    reply: str | None = None
    try:
        logits = rt.ctx.decode(seq, prompt[reused:], reused)
        with GrammarSampler(rt.model, reply_grammar(how.replies)) as sampler:
            while logits is not None and len(tokens) < how.max_tokens:
                token = sampler.choose(logits)
                ended = token is None or rt.model.is_end(token)
                if token is not None and not ended:
                    sampler.accept(token)
                    tokens.append(token)
                reply = _settled(rt.model.detokenize(tokens), how.replies, ended=ended)
                if reply is not None or ended or token is None:
                    break
                logits = rt.ctx.decode(seq, [token], len(prompt) + len(tokens) - 1)
    finally:
        rt.ctx.seq_rm(seq, len(head), -1)
        if head and rt.ctx.seq_range(seq) == (0, len(head) - 1):
            _kept[rt] = head
        else:
            _kept.pop(rt, None)
            rt.ctx.seq_rm(seq)
    return Chosen(reply or "", len(tokens), len(prompt), time.perf_counter() - started)
