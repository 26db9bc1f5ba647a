"""A completion under a grammar (usage examples), on the real model: it parses, and no session is left open."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from nexus_gateway.engine import Completion
from nexus_gateway.engine.completion import complete_steps
from nexus_gateway.engine.runtime import Runtime
from nexus_gateway.generation.examples import EXAMPLES_GRAMMAR, INSTRUCTION, parse_examples, tool_query
from tests.engine.conftest import WEATHER


def drive(rt: Runtime, steps: Generator[Any, Any, Completion]) -> Completion:
    """Run a stepped job alone, a token at a time (what the engine worker does with several at once)."""
    try:
        step = next(steps)
        while True:
            step = steps.send(rt.append_each([step])[0])
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


def test_a_completion_under_the_examples_grammar_is_a_list_of_requests_and_frees_its_sequence(gen_runtime: Runtime):
    free = gen_runtime.free_sessions
    done = drive(gen_runtime, complete_steps(gen_runtime, INSTRUCTION, "", tool_query(WEATHER), EXAMPLES_GRAMMAR, 80))
    assert done.decoded_tokens <= 80 and done.prompt_tokens > 0 and done.model == gen_runtime.fingerprint
    assert done.text.startswith('["')
    assert 1 <= len(parse_examples(done.text)) <= 4
    assert gen_runtime.free_sessions == free
