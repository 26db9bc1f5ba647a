"""Time to the first argument token: full-schema prefill, compressed-signature prefill, and splice.

For each depth one session holds the preamble and `depth` tokens of history; each measurement copies it,
places the tool (tokenizing its text, then: decoding the full schema / decoding its one-line signature /
asking the splicer, which splices, recomputes or prefills as the policy says at that depth), decodes the
request, and stops the clock when the first argument token's logits are there. The three modes take
turns within every case and repetition, so they share the machine's load; results are medians and the
ratios between modes in this one run. `splice_raw_ms_p50` is a pure splice (no recompute) at that depth,
whatever the policy says, to show what the policy gives up for fidelity.

Memory: resident set size of a fresh process (model and a context sized for 8 sessions) before and after
1, 4 and 8 sessions each splice the same blocks, which every session shares through one mmap per file.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nexus_gateway.bench._cases import BenchCase, history
from nexus_gateway.engine.blocks import open_block
from nexus_gateway.engine.compiler import compile_tools
from nexus_gateway.engine.policy import SplicePolicy
from nexus_gateway.engine.runtime import Runtime
from nexus_gateway.engine.settings import EngineSettings
from nexus_gateway.errors import EngineError

DEPTHS = (0, 64, 128, 256, 512, 1024, 2048)
MODES = ("prefill", "signature", "splice")
Progress = Callable[[str], None]


def _median_ms(samples: list[float]) -> float:
    return round(float(np.median(samples)) * 1000.0, 3)


def measure(
    runtime: Runtime,
    cases: Sequence[BenchCase],
    filler: Sequence[BenchCase],
    *,
    depths: Sequence[int] = DEPTHS,
    repeats: int = 3,
    progress: Progress | None = None,
) -> dict[str, Any]:
    store = runtime.store
    if store is None:
        raise EngineError("the time-to-first-token benchmark needs a compiled_schemas folder")
    runtime.reset()
    compile_tools(runtime, [case.record for case in cases])
    ctx, model, policy = runtime.ctx, runtime.model, runtime.policy
    raw_policy = SplicePolicy(P=runtime.ctx.n_ctx, D=runtime.ctx.n_ctx + 1, source="pure splice")
    rows: list[dict[str, Any]] = []
    block_tokens = block_bytes = 0
    open_times: list[float] = []
    for case in cases:
        tokens, key = runtime.tool_tokens(case.record)
        started = time.perf_counter()
        block = open_block(store.path_for(key), fingerprint=runtime.fingerprint, key=key, tokens=tokens)
        open_times.append(time.perf_counter() - started)
        block_tokens += len(tokens)
        block_bytes += block.payload_length
        block.close()
    for depth in depths:
        runtime.reset()
        base = runtime.open_session()
        if depth:
            runtime.append(base, history(runtime, filler, depth), logits=False)
        work = runtime.open_session()
        samples: dict[str, list[float]] = {mode: [] for mode in (*MODES, "splice_raw")}
        placed: set[str] = set()
        tool_tokens: dict[str, list[int]] = {mode: [] for mode in MODES}
        for repeat in range(repeats + 1):  # repeat 0 warms caches and is not counted
            for number, case in enumerate(cases):
                request = model.tokenize(runtime.layout.request_text(case.query), special=True)
                shift = (repeat + number) % len(MODES)
                for mode in (*MODES[shift:], *MODES[:shift], "splice_raw"):
                    ctx.seq_rm(work.seq)
                    ctx.seq_cp(base.seq, work.seq)
                    started = time.perf_counter()
                    if mode == "prefill":
                        tokens, _ = runtime.tool_tokens(case.record)
                        runtime.splicer.prefill(work.seq, base.n_past, tokens)
                    elif mode == "signature":
                        tokens, _ = runtime.line_tokens(case.record)
                        runtime.splicer.prefill(work.seq, base.n_past, tokens)
                    else:
                        tokens, key = runtime.tool_tokens(case.record)
                        chosen = policy if mode == "splice" else raw_policy
                        placement = runtime.splicer.place(work.seq, base.n_past, tokens, key, policy=chosen)
                        if mode == "splice":
                            placed.add(placement.mode)
                    logits = ctx.decode(work.seq, request, base.n_past + len(tokens))
                    assert logits is not None
                    int(np.argmax(logits))  # the first argument token
                    elapsed = time.perf_counter() - started
                    if repeat:
                        samples[mode].append(elapsed)
                        if mode in tool_tokens:
                            tool_tokens[mode].append(len(tokens))
            if progress is not None:
                progress(f"depth {depth}: repeat {repeat}/{repeats}")
        ctx.seq_rm(work.seq)
        decision = policy.decide(depth, round(float(np.mean(tool_tokens["prefill"]))))
        for mode in MODES:
            row: dict[str, Any] = {
                "depth": depth,
                "mode": mode,
                "ttft_ms_p50": _median_ms(samples[mode]),
                "ttft_ms_p90": round(float(np.percentile(samples[mode], 90)) * 1000.0, 3),
                "tool_tokens_mean": round(float(np.mean(tool_tokens[mode])), 1),
            }
            if mode == "splice":
                row["policy"] = decision.mode
                row["R"] = round(decision.fraction, 4)
                row["splice_raw_ms_p50"] = _median_ms(samples["splice_raw"])
                row["placements"] = sorted(placed)
            rows.append(row)
    by = {(row["depth"], row["mode"]): row for row in rows}
    ratios = [
        {
            "depth": depth,
            "prefill_over_splice": round(by[depth, "prefill"]["ttft_ms_p50"] / by[depth, "splice"]["ttft_ms_p50"], 3),
            "prefill_over_signature": round(
                by[depth, "prefill"]["ttft_ms_p50"] / by[depth, "signature"]["ttft_ms_p50"], 3
            ),
            "prefill_over_raw_splice": round(
                by[depth, "prefill"]["ttft_ms_p50"] / by[depth, "splice"]["splice_raw_ms_p50"], 3
            ),
        }
        for depth in depths
    ]
    return {
        "rows": rows,
        "ratios": ratios,
        "P": policy.P,
        "D": policy.D,
        "policy_source": policy.source,
        "block_bytes_per_token": round(block_bytes / block_tokens, 1),
        "block_open_cold_ms_p50": _median_ms(open_times),
        "cases": len(cases),
        "repeats": repeats,
    }


def _probe(settings: dict[str, Any], root: str, tools: list[Any], sessions: int, queue: Any) -> None:
    """Child process: RSS before and after `sessions` sessions splice the same compiled blocks."""
    import psutil

    process = psutil.Process()
    runtime = Runtime.load(EngineSettings.model_validate(settings), compiled_root=Path(root))
    try:
        runtime.splicer.policy = SplicePolicy(P=runtime.ctx.n_ctx, D=runtime.ctx.n_ctx + 1)
        loaded = process.memory_info().rss
        states = [runtime.open_session() for _ in range(sessions)]
        modes = set()
        for state in states:
            for record in tools:
                modes.add(runtime.place_tool(state, record).mode)
            runtime.append_text(state, runtime.layout.request_text("Do it now."))
            runtime.greedy(state, 4)
        used = process.memory_info().rss
        queue.put(
            {
                "sessions": sessions,
                "rss_mb_loaded": round(loaded / 2**20, 1),
                "rss_mb": round(used / 2**20, 1),
                "placements": sorted(modes),
            }
        )
    finally:
        runtime.close()


def memory(
    settings: EngineSettings, root: Path, cases: Sequence[BenchCase], counts: Sequence[int] = (1, 4, 8)
) -> list[dict[str, Any]]:
    """RSS of a fresh process per session count; every process compiles nothing and shares the blocks."""
    spawn = multiprocessing.get_context("spawn")
    tools = [case.record for case in cases]
    probe = settings.model_copy(update={"sessions": max(counts)}).model_dump()
    results = []
    for count in counts:
        queue = spawn.Queue()
        child = spawn.Process(target=_probe, args=(probe, str(root), tools, count, queue))
        child.start()
        result = queue.get(timeout=600)
        child.join(timeout=60)
        results.append(result)
    base = results[0]["rss_mb"]
    for result in results:
        result["ratio_to_one_session"] = round(result["rss_mb"] / base, 3)
    return results
