"""The local model choosing among routing candidates whose retrieval margin is too thin.

The candidates' signatures are listed, numbered, before the request; the next-token scores of the
numbers give the model's choice and its probability (a softmax over the candidates only). The session
is left as it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from nexus_gateway.engine.runtime import Runtime

MAX_CANDIDATES = 5


@dataclass(frozen=True)
class Choice:
    index: int
    probability: float


def choose(rt: Runtime, seq: int, query: str, signatures: Sequence[str]) -> Choice:
    """Which of `signatures` (at most `MAX_CANDIDATES`) fits `query`: runs on the engine thread."""
    shown = list(signatures)[:MAX_CANDIDATES]
    state = rt.session(seq)
    mark = state.n_past
    listing = "".join(f"{number}. {text}\n" for number, text in enumerate(shown, start=1))
    question = f"{query.strip()}\nWhich candidate tool does this request need? Answer with its number."
    request = rt.layout.request_text(question).removesuffix('{"')
    try:
        logits = rt.append_text(state, "Candidate tools:\n" + listing + request)
        assert logits is not None
        ids = [rt.model.tokenize(str(number))[0] for number in range(1, len(shown) + 1)]
        scores = logits[ids].astype(np.float64)
        probs = np.exp(scores - scores.max())
        probs /= probs.sum()
        best = int(np.argmax(probs))
        return Choice(best, round(float(probs[best]), 4))
    finally:
        rt.rewind(state, mark)
