"""Query likelihood (re-ranking): how likely the request is after each candidate tool, teacher-forced.

    <bos> preamble | tool line (tool_line) | user turn opening | request tokens <end of turn>
                                                                ^ scored: log P(token | everything before)

For each tool the request's tokens are decoded after the tool's line (`prompt.tool_line`: the
signature's form with the whole description, up to 48 words) in a sequence of its own (a copy of the
preamble) and their log-probabilities summed (UPR: Sachan et al. 2022, "Improving Passage Retrieval
with Zero-Shot Question Generation"). The request is the same for every tool, so the sums compare
directly: the tool under which the model finds the request most likely explains it best. The same
request after no tool at all is the baseline (`without`): a tool that does not raise the request's
likelihood above it says nothing for it. Nothing is sampled, so there is no position bias. The candidates'
sequences are decoded together (`LlamaContext.decode_all`: one pass over the weights for all of them), emptied
afterwards, and no session changes.

The tool's part does not depend on the request: with a block store, it is compiled once into a block
(keyed by its text, like the full schemas' blocks) and spliced at depth 0, which is exact (no shift), so
a tool seen before costs only the request's tokens.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.engine import Likelihoods
from nexus_gateway.engine.blocks import Block
from nexus_gateway.engine.runtime import Runtime
from nexus_gateway.errors import BlockRejected, EngineError


def _log_probs(rows: np.ndarray, targets: list[int]) -> np.ndarray:
    """log P(targets[i]) under the logits `rows[i]` (a log-softmax per row, taken at one column)."""
    peak = rows.max(axis=1, keepdims=True)
    norm = np.log(np.exp(rows - peak).sum(axis=1)) + peak[:, 0]
    picked: np.ndarray = rows[np.arange(len(targets)), targets] - norm
    return picked


def _scoring_block(rt: Runtime, tokens: list[int], key: str) -> tuple[Block | None, int]:
    """The compiled block of a tool line (compiled and saved first when the store has none or a bad one)
    and the tokens decoded for it; (None, 0) without a store or when the line does not fit."""
    if rt.store is None or rt.anchor + len(tokens) >= rt.ctx.n_ctx:
        return None, 0
    try:
        block = rt.store.get(key, tokens=tokens, anchor=rt.anchor)
    except BlockRejected:
        block = None
    if block is not None:
        return block, 0
    rt.store.write(key, rt.anchor, tokens, rt.compile_tokens(tokens))
    return rt.store.get(key, tokens=tokens, anchor=rt.anchor), len(tokens)


def _place_tool(rt: Runtime, seq: int, record: ToolRecord) -> int:
    """Put `record`'s line right after the preamble of the empty-after-preamble `seq`: its block spliced
    (compiled first when the store has none), or prefilled without a store. Tokens decoded."""
    tokens, key = rt.line_tokens(record)
    block, decoded = _scoring_block(rt, tokens, key)
    if block is None or not rt.splicer.splice(seq, rt.anchor, block):
        rt.ctx.decode(seq, tokens, rt.anchor, logits=False)
        return len(tokens)
    return decoded


def compile_scoring(rt: Runtime, records: Sequence[ToolRecord]) -> int:
    """Compile the scoring blocks of `records` that are not compiled yet (re-ranking then costs only the
    request's tokens for them); how many were compiled."""
    compiled = 0
    for record in records:
        compiled += _scoring_block(rt, *rt.line_tokens(record))[1] > 0
    return compiled


def request_likelihoods(rt: Runtime, records: Sequence[ToolRecord], query: str) -> Likelihoods:
    """The summed log-probability of `query`'s tokens after each of `records` (in order), and after none: each
    candidate in a scoring sequence of its own, as many at once as there are (`Runtime.scoring`)."""
    started = time.perf_counter()
    opening, _, closing = rt.layout.request.partition("{query}")
    before = rt.model.tokenize(opening, special=True)
    target = rt.model.tokenize(query.strip()) + rt.model.tokenize(closing, special=True)[:1]
    if not before or not query.strip():
        raise EngineError("query likelihood needs a request and a layout with a user turn before it")
    forced = [*before, *target[:-1]]  # the user turn's opening is decoded in the same batch, without its rows
    candidates: list[ToolRecord | None] = [*records, None]
    scores: list[float] = []
    tokens = 0
    for first in range(0, len(candidates), len(rt.scoring)):
        group = candidates[first : first + len(rt.scoring)]
        seqs = rt.scoring[: len(group)]
        try:
            steps = []
            for seq, record in zip(seqs, group, strict=True):
                rt.ctx.seq_rm(seq)
                rt.ctx.seq_cp(rt.template, seq)
                if record is not None:
                    tokens += _place_tool(rt, seq, record)
                start = rt.ctx.seq_range(seq)[1] + 1
                if start + len(forced) + 1 > rt.ctx.n_ctx:
                    raise EngineError(f"a tool and the request are more than the context's {rt.ctx.n_ctx} tokens")
                steps.append((seq, forced, start))
            rows = rt.ctx.decode_all(steps, skip=len(before) - 1)
            tokens += len(forced) * len(steps)
            scores += [float(_log_probs(each, target).sum()) for each in rows]
        finally:
            for seq in seqs:
                rt.ctx.seq_rm(seq)
    return Likelihoods(tuple(scores[:-1]), scores[-1], len(target), tokens, time.perf_counter() - started)
