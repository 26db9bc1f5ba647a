"""`Reranker`: below the margin gate, the local model chooses among the best few tools, or none.

    request, top-k signatures -> Engine.choose -> one of the k names, or "none"

The reply is constrained by a GBNF grammar to the candidates' names and `none`, so it is always one
of them. The prompt shows each candidate's compressed one-line signature (name, parameters,
description) in retrieval order; it is the same for every catalog (no wording tuned to one set).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.engine import Choosing, Engine

NONE = "none"
DEFAULT_K = 5
INSTRUCTION = (
    "You choose the tool that does what the user asks. These are the tools, one a line: name(parameters) - "
    f"what it does. Reply with the name of the one tool that fits the request best, exactly as written, or "
    f"{NONE} when no tool fits."
)


@dataclass(frozen=True)
class Reranked:
    candidates: tuple[str, ...]
    """The names shown, in retrieval order."""
    choice: str | None
    """The model's choice; None when it said none fits."""
    reply: str
    ms: float
    prompt_tokens: int

    def trace(self) -> dict[str, Any]:
        return {
            "reranked": True,
            "candidates": list(self.candidates),
            "choice": self.choice,
            "rerank_ms": self.ms,
            "rerank_prompt_tokens": self.prompt_tokens,
        }


class Reranker:
    def __init__(self, engine: Engine, *, k: int = DEFAULT_K) -> None:
        if k < 1:
            raise ValueError("re-ranking needs at least one candidate")
        self.engine = engine
        self.k = k

    async def rerank(self, query: str, records: Sequence[ToolRecord]) -> Reranked:
        """The model's choice among the first `k` of `records` (best first) for `query`."""
        shown = list(records[: self.k])
        names = tuple(record.name for record in shown)
        options = "".join(f"{record.signature}\n" for record in shown)
        how = Choosing(instruction=INSTRUCTION, options=options, query=query, replies=(*names, NONE))
        chosen = await self.engine.choose(how)
        reply = chosen.text
        choice = reply if reply in names else None  # a tool named `none` is chosen by its name
        return Reranked(names, choice, reply, round(chosen.total_s * 1000, 2), chosen.prompt_tokens)
