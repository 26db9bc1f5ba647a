"""Re-ranking with the real default model: the reply is one of the candidates' names or none, always."""

import anyio
import pytest

from nexus_gateway.engine import Choosing, Chosen
from nexus_gateway.engine.choosing import choose, reply_grammar
from nexus_gateway.engine.runtime import Runtime
from nexus_gateway.generation.rerank import NONE, Reranker
from tests.engine.conftest import EMAIL, WEATHER

pytestmark = pytest.mark.anyio


class RuntimeEngine:
    """The `Engine.choose` of a runtime driven on this thread (the generation fixture's runtime)."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    async def choose(self, how: Choosing) -> Chosen:
        return choose(self.rt, how)


def test_the_reply_grammar_admits_exactly_the_replies_and_escapes_them():
    grammar = reply_grammar(['get "x"', "a\\b", 'get "x"'])
    assert grammar == 'root ::= "get \\"x\\"" | "a\\\\b"\n'


async def test_the_model_chooses_the_tool_the_request_names_among_the_candidates(gen_runtime: Runtime):
    gen_runtime.reset()
    reranker = Reranker(RuntimeEngine(gen_runtime))  # type: ignore[arg-type]
    with anyio.fail_after(120):
        weather = await reranker.rerank("What is the weather in Paris right now?", [EMAIL, WEATHER])
        email = await reranker.rerank("Send an email to bob@example.com saying hi", [WEATHER, EMAIL])
    assert weather.choice == WEATHER.name and weather.candidates == (EMAIL.name, WEATHER.name), weather
    assert email.choice == EMAIL.name and email.ms > 0 and email.prompt_tokens > 0, email


def test_a_reply_is_one_of_the_replies_even_when_names_start_alike(gen_runtime: Runtime):
    """`calc` is the start of `calculator`: decoding goes on until one reply is settled, never a cut-off name."""
    gen_runtime.reset()
    replies = ("calc", "calculator", "calculator_pro", NONE)
    for query in ("What is 2 + 2?", "Use the calculator", "hello"):
        how = Choosing(
            instruction="Choose a tool name.",
            options="calc\ncalculator\ncalculator_pro\n",
            query=query,
            replies=replies,
        )
        assert choose(gen_runtime, how).text in replies


def test_a_choice_leaves_every_session_as_it_was(gen_runtime: Runtime):
    gen_runtime.reset()
    state = gen_runtime.open_session()
    gen_runtime.append_text(state, "Earlier request: hello\nArguments: {}\n", logits=False)
    before = (state.n_past, gen_runtime.ctx.seq_range(state.seq), gen_runtime.ctx.seq_range(gen_runtime.template))
    how = Choosing(instruction="Choose.", options="a\nb\n", query="b please", replies=("a", "b", NONE))
    first, second = choose(gen_runtime, how), choose(gen_runtime, how)  # the second reuses the instruction
    after = (state.n_past, gen_runtime.ctx.seq_range(state.seq), gen_runtime.ctx.seq_range(gen_runtime.template))
    assert after == before and first.text == second.text
