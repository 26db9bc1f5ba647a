"""How close a spliced block comes to prefilling the same text, by depth and recompute fraction.

For each depth, one session holds the preamble and at least `depth` tokens of earlier exchanges (whole
turns, as a real session holds them: bench/_cases.history). For each case
(a real tool and its request) the tool text is placed into a copy of that session in several ways:

    prefill     decode the text (the reference)
    R = r       splice the block, shift it to the depth, re-decode its last ceil(r * n) tokens
                (r = 1 re-decodes everything after the splice: the policy never does that, it prefills,
                but it is measured to show why)

then the request is decoded and the model continues greedily. llama.cpp's results depend slightly on
which cells a token sits in and on how tokens are grouped into a decode call: two prefills of the same
text that differ only in that are about 1e-2 nats apart on a CPU with a Q4 model. So each variant is
rebuilt in the same cells as its reference (the copy is dropped and remade), and the reference for
r strictly between 0 and 1 is a prefill whose last ceil(r * n) tokens are then decoded again the same
way the variant re-decodes them: the comparison sees the method, not that noise. Per (depth, r): mean
and max of KL(prefill || variant) over the first argument token's distribution, top-1 agreement, and
agreement of the whole greedy continuation (`greedy_tokens` tokens, or up to the end of turn; a variant
whose first logits are bit-identical to its reference's has the same cache, and its continuation is
taken as the reference's instead of being decoded again).

`policy` in each row is what the calibrated policy does at that depth with that fraction: "splice" or
"recompute" where it would place the block with at least this much re-decoding, "prefill" where it
prefills instead (beyond D, at r = 1, or where r is below the fraction it requires at that depth).

The drift proxy: per-head key variance of each block (read from its payload) against its splice drift
(KL at r = 0), Spearman's rho across tools at each depth > 0, averaged over depths.

`noise_floor` measures that llama.cpp noise itself (prefill against prefill), for reading the results.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nexus_gateway.bench._cases import BenchCase, history
from nexus_gateway.bench._kv_stats import key_variance, spearman
from nexus_gateway.engine.blocks import Block
from nexus_gateway.engine.compiler import compile_tools
from nexus_gateway.engine.policy import Cell, PlacementMode, SplicePolicy
from nexus_gateway.engine.runtime import Runtime
from nexus_gateway.errors import EngineError

logger = logging.getLogger(__name__)

DEPTHS = (0, 64, 128, 256, 512, 1024, 2048)
FRACTIONS = (0.0, 0.25, 0.5, 1.0)
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Trial:
    depth: int
    fraction: float
    case: str
    kl: float
    top1: bool
    greedy: bool


def log_softmax(logits: np.ndarray) -> np.ndarray:
    values = logits.astype(np.float64)
    shifted = values - values.max()
    result: np.ndarray = shifted - math.log(float(np.exp(shifted).sum()))
    return result


def kl_divergence(reference: np.ndarray, other: np.ndarray) -> float:
    """KL(reference || other) in nats, from two logit vectors."""
    p, q = log_softmax(reference), log_softmax(other)
    return max(0.0, float((np.exp(p) * (p - q)).sum()))


@dataclass(frozen=True)
class _Bench:
    """One depth's fixed session (`base`) and the work sequence every variant is rebuilt in."""

    runtime: Runtime
    base: int
    work: int
    n_past: int
    greedy_tokens: int

    def run(
        self,
        block: Block,
        request: list[int],
        *,
        splice: bool,
        recompute: int,
        expected: tuple[np.ndarray, list[int]] | None = None,
    ) -> tuple[np.ndarray, list[int]]:
        """Splice the block, or (`splice` False) prefill it; re-decode its last `recompute` tokens; decode the
        request, continue greedily. Returns the first argument token's logits and the greedy tokens."""
        ctx, work, tokens = self.runtime.ctx, self.work, list(block.tokens)
        n = len(tokens)
        ctx.seq_rm(work)
        ctx.seq_cp(self.base, work)
        if splice:
            if not self.runtime.splicer.splice(work, self.n_past, block, recompute):
                raise EngineError(f"block {block.path} did not restore")
        else:
            ctx.decode(work, tokens, self.n_past, logits=False)
            if 0 < recompute < n:
                ctx.seq_rm(work, self.n_past + n - recompute, -1)
                ctx.decode(work, tokens[n - recompute :], self.n_past + n - recompute, logits=False)
        logits = ctx.decode(work, request, self.n_past + n)
        assert logits is not None
        if expected is not None and np.array_equal(logits, expected[0]):
            greedy = expected[1]  # bit-identical logits: the same cache, so the same continuation
        else:
            greedy = self._continue(self.n_past + n + len(request), logits, None if expected is None else expected[1])
        ctx.seq_rm(work)
        return logits, greedy

    def _continue(self, pos: int, logits: np.ndarray, expected: list[int] | None) -> list[int]:
        """Greedy tokens; stops at an end token, at the limit, or at the first miss of `expected`."""
        out: list[int] = []
        while True:
            token = int(np.argmax(logits))
            out.append(token)
            if expected is not None and (len(out) > len(expected) or token != expected[len(out) - 1]):
                return out
            if self.runtime.model.is_end(token) or len(out) >= self.greedy_tokens:
                return out
            next_logits = self.runtime.ctx.decode(self.work, [token], pos + len(out) - 1)
            assert next_logits is not None
            logits = next_logits


def _blocks(runtime: Runtime, cases: Sequence[BenchCase]) -> tuple[dict[str, Block], dict[str, float]]:
    """Compile (or reuse) each case's block; its drift proxy when the payload can be read."""
    store = runtime.store
    if store is None:
        raise EngineError("the fidelity benchmark needs a compiled_schemas folder")
    runtime.reset()
    compile_tools(runtime, [case.record for case in cases])
    blocks, proxies = {}, {}
    info = runtime.model.info
    for case in cases:
        tokens, key = runtime.tool_tokens(case.record)
        block = store.get(key, tokens=tokens, anchor=runtime.anchor)
        if block is None:
            raise EngineError(f"no block for {case.record.name} (too long for n_ctx {runtime.ctx.n_ctx}?)")
        blocks[case.id] = block
        variance = key_variance(bytes(block.buffer[block.payload_offset :]), len(tokens), info.n_layer, info.n_head_kv)
        if variance is not None:
            proxies[case.id] = float(variance.mean())
    return blocks, proxies


def measure(
    runtime: Runtime,
    cases: Sequence[BenchCase],
    filler: Sequence[BenchCase],
    *,
    depths: Sequence[int] = DEPTHS,
    fractions: Sequence[float] = FRACTIONS,
    greedy_tokens: int = 32,
    progress: Progress | None = None,
) -> tuple[list[Trial], dict[str, float]]:
    """Every (depth, fraction, case) trial, and each case's drift proxy (mean per-head key variance)."""
    blocks, proxies = _blocks(runtime, cases)
    trials: list[Trial] = []
    for depth in depths:
        runtime.reset()
        base = runtime.open_session()
        if depth:
            runtime.append(base, history(runtime, filler, depth), logits=False)
        bench = _Bench(runtime, base.seq, runtime.open_session().seq, base.n_past, greedy_tokens)
        for number, case in enumerate(cases, 1):
            block = blocks[case.id]
            n = len(block.tokens)
            request = runtime.model.tokenize(runtime.layout.request_text(case.query), special=True)
            references: dict[int, tuple[np.ndarray, list[int]]] = {}
            for fraction in fractions:
                recompute = min(n, math.ceil(fraction * n - 1e-9))
                split = recompute if 0 < recompute < n else 0
                if split not in references:
                    references[split] = bench.run(block, request, splice=False, recompute=split)
                reference, expected = references[split]
                logits, tokens = bench.run(block, request, splice=True, recompute=recompute, expected=references[split])
                top1 = int(np.argmax(logits)) == int(np.argmax(reference))
                kl = kl_divergence(reference, logits)
                trials.append(Trial(depth, fraction, case.id, kl, top1, tokens == expected))
            if progress is not None:
                progress(f"depth {depth}: {number}/{len(cases)}")
    return trials, proxies


def noise_floor(
    runtime: Runtime, cases: Sequence[BenchCase], filler: Sequence[BenchCase], *, depths: Sequence[int] = DEPTHS
) -> dict[int, dict[str, float]]:
    """How far two plain prefills of the same text drift apart in llama.cpp alone, per depth (mean KL over
    cases of the first argument token): `cells` when the text sits in other KV cells (a 64-token neighbour
    sequence occupies the first free ones), `batch` when its last quarter is decoded in a second call.
    This is the floor below which no splice measurement means anything."""
    blocks, _ = _blocks(runtime, cases)
    floor: dict[int, dict[str, float]] = {}
    for depth in depths:
        runtime.reset()
        base = runtime.open_session()
        if depth:
            runtime.append(base, history(runtime, filler, depth), logits=False)
        work, spacer = runtime.open_session().seq, runtime.open_session()
        bench = _Bench(runtime, base.seq, work, base.n_past, 1)
        drift: dict[str, list[float]] = {"cells": [], "batch": []}
        for case in cases:
            block = blocks[case.id]
            n = len(block.tokens)
            request = runtime.model.tokenize(runtime.layout.request_text(case.query), special=True)
            reference, _ = bench.run(block, request, splice=False, recompute=0)
            split, _ = bench.run(block, request, splice=False, recompute=max(1, n // 4))
            runtime.ctx.decode(spacer.seq, list(block.tokens)[:1] * 64, spacer.n_past, logits=False)
            moved, _ = bench.run(block, request, splice=False, recompute=0)
            runtime.ctx.seq_rm(spacer.seq, spacer.n_past, -1)
            drift["batch"].append(kl_divergence(reference, split))
            drift["cells"].append(kl_divergence(reference, moved))
        floor[depth] = {kind: float(np.mean(values)) for kind, values in drift.items()}
    return floor


def cells(trials: Sequence[Trial]) -> list[Cell]:
    grouped: dict[tuple[int, float], list[Trial]] = {}
    for trial in trials:
        grouped.setdefault((trial.depth, trial.fraction), []).append(trial)
    return [
        Cell(
            depth,
            fraction,
            float(np.mean([t.kl for t in group])),
            float(np.mean([t.top1 for t in group])),
            float(np.mean([t.greedy for t in group])),
        )
        for (depth, fraction), group in sorted(grouped.items())
    ]


def policy_label(policy: SplicePolicy, depth: int, fraction: float) -> PlacementMode:
    """What the policy does at `depth` if the block is re-decoded by `fraction`: see the module docstring."""
    needed = policy.fraction(depth)
    if depth >= policy.D or fraction >= 1.0 or needed >= 1.0 or fraction < needed:
        return "prefill"
    return "splice" if fraction == 0.0 else "recompute"


def drift_proxy_spearman(trials: Sequence[Trial], proxies: dict[str, float]) -> tuple[float | None, dict[int, float]]:
    """Mean over depths > 0 of Spearman(key variance, KL at r = 0) across tools, and the per-depth values."""
    per_depth: dict[int, float] = {}
    for depth in sorted({t.depth for t in trials if t.depth > 0}):
        chosen = [t for t in trials if t.depth == depth and t.fraction == 0.0 and t.case in proxies]
        pairs = [(proxies[t.case], t.kl) for t in chosen]
        rho = spearman([p for p, _ in pairs], [k for _, k in pairs])
        if rho is not None:
            per_depth[depth] = rho
    return (float(np.mean(list(per_depth.values()))) if per_depth else None), per_depth


def report(model: str, trials: Sequence[Trial], policy: SplicePolicy, proxies: dict[str, float]) -> dict[str, Any]:
    """The benchmark's JSON: exactly model, rows and drift_proxy_spearman."""
    grouped: dict[tuple[int, float], list[Trial]] = {}
    for trial in trials:
        grouped.setdefault((trial.depth, trial.fraction), []).append(trial)
    rows = [
        {
            "depth": depth,
            "R": fraction,
            "policy": policy_label(policy, depth, fraction),
            "kl_mean": float(np.mean([t.kl for t in group])),
            "kl_max": float(np.max([t.kl for t in group])),
            "top1_agree": float(np.mean([t.top1 for t in group])),
            "greedy_agree": float(np.mean([t.greedy for t in group])),
        }
        for (depth, fraction), group in sorted(grouped.items())
    ]
    rho, _ = drift_proxy_spearman(trials, proxies)
    return {"model": model, "rows": rows, "drift_proxy_spearman": rho}
