"""The session history the splice benchmarks measure at: what a real session would hold."""

from __future__ import annotations

from nexus_gateway.bench._cases import SHIPPED, history, load_cases
from nexus_gateway.engine import Turn
from nexus_gateway.engine.runtime import Runtime


def test_benchmark_history_is_whole_turns_and_at_least_the_depth(gen_runtime: Runtime):
    filler = load_cases(SHIPPED / "tools.json", SHIPPED / "cases.jsonl", count=40, offset=56, exact=False)
    turns = [gen_runtime.layout.turn_text(Turn(case.query, case.arguments)) for case in filler]
    longest = max(len(gen_runtime.model.tokenize(turn, special=True)) for turn in turns)
    for depth in (64, 256, 1024):
        tokens = history(gen_runtime, filler, depth)
        assert depth <= len(tokens) < depth + longest
        text, whole = gen_runtime.model.detokenize(tokens), ""
        for turn in turns * (1 + depth):
            if len(whole) >= len(text):
                break
            whole += turn
        assert whole == text, f"depth {depth}: the history ends inside a turn: ...{text[-60:]!r}"
