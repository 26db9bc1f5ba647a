"""Query likelihood (re-ranking): how likely the request is after each candidate tool, teacher-forced.

    <bos> preamble | tool text (signature) | user turn opening | request tokens <end of turn>
                                                                ^ scored: log P(token | everything before)

For each tool the request's tokens are decoded after the tool's one-line signature in a session of
their own (a copy of the preamble) and their log-probabilities summed (UPR: Sachan et al. 2022, "Improving
Passage Retrieval with Zero-Shot Question Generation"). The request is the same for every tool, so the
sums compare directly: the tool under which the model finds the request most likely explains it best. The
same request after no tool at all is the baseline (`without`): a tool that does not raise the request's
likelihood above it says nothing for it. Nothing is sampled, so there is no position bias; the session is
closed afterwards and no other session changes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.engine import Likelihoods
from nexus_gateway.engine.prompt import signature_text
from nexus_gateway.engine.runtime import Runtime
from nexus_gateway.errors import EngineError


def _log_probs(rows: np.ndarray, targets: list[int]) -> np.ndarray:
    """log P(targets[i]) under the logits `rows[i]` (a log-softmax per row, taken at one column)."""
    peak = rows.max(axis=1, keepdims=True)
    norm = np.log(np.exp(rows - peak).sum(axis=1)) + peak[:, 0]
    return rows[np.arange(len(targets)), targets] - norm


def request_likelihoods(rt: Runtime, records: Sequence[ToolRecord], query: str) -> Likelihoods:
    """The summed log-probability of `query`'s tokens after each of `records` (in order), and after none."""
    started = time.perf_counter()
    opening, _, closing = rt.layout.request.partition("{query}")
    before = rt.model.tokenize(opening, special=True)
    target = rt.model.tokenize(query.strip()) + rt.model.tokenize(closing, special=True)[:1]
    if not before or not query.strip():
        raise EngineError("query likelihood needs a request and a layout with a user turn before it")
    state = rt.open_session()
    seq, tokens = state.seq, 0

    def scored(tool: list[int]) -> float:
        nonlocal tokens
        start = rt.anchor
        head = tool + before[:-1]
        if start + len(head) + len(target) > rt.ctx.n_ctx:
            raise EngineError(f"a tool and the request are more than the context's {rt.ctx.n_ctx} tokens")
        try:
            if head:
                rt.ctx.decode(seq, head, start, logits=False)
            rows = rt.ctx.decode_all(seq, [before[-1], *target[:-1]], start + len(head))
            tokens += len(head) + len(target)
            return float(_log_probs(rows, target).sum())
        finally:
            rt.ctx.seq_rm(seq, start, -1)

    try:
        per_tool = tuple(scored(rt.model.tokenize(signature_text(record))) for record in records)
        without = scored([])
    finally:
        rt.close_session(state)
    return Likelihoods(per_tool, without, len(target), tokens, time.perf_counter() - started)
