"""Put a tool text into a session: splice its compiled block, re-decode part of it, or prefill it.

Anchored splice: restore the block into an empty scratch sequence (it lands at its anchor positions),
shift it to the session's depth with `seq_add` (llama.cpp re-rotates the keys), copy it into the session,
drop the scratch. Then, if the policy says so, remove the last R of the block's tokens from the session
and decode them again so they attend to the session. A block that is missing, fails validation, or that
llama.cpp will not restore is never spliced: the text is prefilled instead, with a log line saying why.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from nexus_gateway.engine.blocks import Block
from nexus_gateway.engine.policy import PlacementMode, SplicePolicy
from nexus_gateway.errors import BlockRejected, EngineError

logger = logging.getLogger(__name__)


class KVContext(Protocol):
    """The sequence operations the splicer needs (`LlamaContext` provides them)."""

    def decode(self, seq: int, tokens: list[int], pos: int, *, logits: bool = True) -> np.ndarray | None: ...
    def seq_rm(self, seq: int, p0: int = -1, p1: int = -1) -> bool: ...
    def seq_cp(self, src: int, dst: int) -> None: ...
    def seq_add(self, seq: int, delta: int) -> None: ...
    def seq_range(self, seq: int) -> tuple[int, int]: ...
    def restore_seq(self, seq: int, data: Any, offset: int, length: int) -> bool: ...


class BlockSource(Protocol):
    """Where validated blocks come from (`BlockStore`); None for a text never compiled."""

    def get(self, key: str, *, tokens: list[int] | None = None, anchor: int | None = None) -> Block | None: ...


@dataclass(frozen=True)
class Placement:
    mode: PlacementMode
    n_tokens: int
    recomputed: int
    """Tokens decoded for the tool text: the recomputed suffix after a splice, all of them for a prefill."""
    reason: str


class Splicer:
    def __init__(
        self, ctx: KVContext, blocks: BlockSource | None, policy: SplicePolicy, *, scratch: int, anchor: int
    ) -> None:
        self.ctx = ctx
        self.blocks = blocks
        self.policy = policy
        self.scratch = scratch
        self.anchor = anchor

    def place(
        self, seq: int, n_past: int, tokens: list[int], key: str, *, policy: SplicePolicy | None = None
    ) -> Placement:
        """Add the tool text `tokens` (block `key`) to `seq` at `n_past`, the way the policy (this splicer's,
        unless another is given) says."""
        self._check_end(seq, n_past)
        decision = (policy or self.policy).decide(n_past - self.anchor, len(tokens))
        if decision.mode == "prefill":
            return self.prefill(seq, n_past, tokens, reason=f"policy at depth {n_past - self.anchor}")
        block, why = self._block(key, tokens)
        if block is None:
            return self.prefill(seq, n_past, tokens, reason=why)
        if not self.splice(seq, n_past, block, decision.recompute):
            return self.prefill(seq, n_past, tokens, reason="llama.cpp refused to restore the block")
        return Placement(decision.mode, len(tokens), decision.recompute, "policy")

    def prefill(self, seq: int, n_past: int, tokens: list[int], *, reason: str = "prefill") -> Placement:
        self.ctx.decode(seq, tokens, n_past, logits=False)
        return Placement("prefill", len(tokens), len(tokens), reason)

    def splice(self, seq: int, n_past: int, block: Block, recompute: int = 0) -> bool:
        """Splice `block` at `n_past`, then re-decode its last `recompute` tokens. False (and nothing changed)
        when llama.cpp does not restore it to exactly its anchored positions."""
        scratch, tokens = self.scratch, list(block.tokens)
        n = len(tokens)
        self.ctx.seq_rm(scratch)
        restored = self.ctx.restore_seq(scratch, block.buffer, block.payload_offset, block.payload_length)
        span = self.ctx.seq_range(scratch)
        if not restored or span != (block.header.anchor, block.header.anchor + n - 1):
            self.ctx.seq_rm(scratch)
            logger.warning("KV block %s not restored (positions %s); prefilling instead", block.path, span)
            return False
        delta = n_past - block.header.anchor
        if delta:
            self.ctx.seq_add(scratch, delta)
        self.ctx.seq_cp(scratch, seq)
        self.ctx.seq_rm(scratch)
        if recompute:
            start = n_past + n - recompute
            if not self.ctx.seq_rm(seq, start, -1):
                raise EngineError(f"could not drop positions from {start} of sequence {seq} to re-decode them")
            self.ctx.decode(seq, tokens[n - recompute :], start, logits=False)
        return True

    def _block(self, key: str, tokens: list[int]) -> tuple[Block | None, str]:
        if self.blocks is None:
            return None, "no block store"
        try:
            block = self.blocks.get(key, tokens=tokens, anchor=self.anchor)
        except BlockRejected as exc:
            logger.warning("%s", exc)
            return None, f"block rejected: {exc.reason}"
        return block, "" if block is not None else "no compiled block"

    def _check_end(self, seq: int, n_past: int) -> None:
        last = self.ctx.seq_range(seq)[1]
        if last + 1 != n_past:
            raise EngineError(f"sequence {seq} ends at position {last}, not at n_past - 1 = {n_past - 1}")
