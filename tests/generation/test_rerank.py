"""Re-ranking with the real default model: every candidate is scored (query likelihood) and fused with retrieval."""

from collections.abc import Sequence

import anyio
import pytest

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.engine import Likelihoods
from nexus_gateway.engine.runtime import Runtime
from nexus_gateway.engine.scoring import compile_scoring, request_likelihoods
from nexus_gateway.generation.rerank import Reranker, fuse, standardized
from tests.engine.conftest import EMAIL, WEATHER

pytestmark = pytest.mark.anyio

CLOCK = ToolRecord(
    name="get_current_time",
    server="",
    upstream_name="get_current_time",
    description="The current time in an IANA time zone.",
    input_schema={"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]},
)


class RuntimeEngine:
    """The `Engine` scoring of a runtime driven on this thread (the generation fixture's runtime)."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    async def request_likelihoods(self, records: Sequence[ToolRecord], query: str) -> Likelihoods:
        return request_likelihoods(self.rt, records, query)


def test_the_fused_pick_is_retrievals_when_the_model_is_indifferent_and_the_models_when_retrieval_is():
    retrieval, flat = [0.52, 0.50, 0.31], [-20.0, -20.0, -20.0]
    assert standardized(flat) == [0.0, 0.0, 0.0]
    assert fuse(retrieval, flat) == standardized(retrieval)  # argmax: retrieval's first
    assert max(range(3), key=fuse([0.4, 0.4, 0.4], [-30.0, -12.0, -25.0]).__getitem__) == 1


async def test_every_candidate_is_scored_and_the_tool_the_request_names_wins(gen_runtime: Runtime):
    gen_runtime.reset()
    reranker = Reranker(RuntimeEngine(gen_runtime))  # type: ignore[arg-type]
    with anyio.fail_after(120):
        weather = await reranker.rerank("What is the weather in Paris?", [EMAIL, CLOCK, WEATHER], [0.3] * 3)
        email = await reranker.rerank("Send an email to bob@example.com saying hi", [WEATHER, EMAIL], [0.3, 0.3])
    assert len(weather.likelihood) == 3 and weather.candidates == (EMAIL.name, CLOCK.name, WEATHER.name), weather
    assert weather.choice == WEATHER.name and max(weather.likelihood) == weather.likelihood[2] > weather.without
    assert email.choice == EMAIL.name and email.ms > 0 and email.decoded_tokens > 0, email
    trace = email.trace()
    assert [row["name"] for row in trace["scores"]] == [WEATHER.name, EMAIL.name] and trace["choice"] == EMAIL.name


async def test_a_signature_seen_before_is_spliced_from_its_block_and_scores_the_same(gen_runtime: Runtime):
    gen_runtime.reset()
    query, clock = (
        "What time is it in Tokyo?",
        ToolRecord.from_tool("", {"name": "world_clock", "description": "Time."}),
    )
    first = request_likelihoods(gen_runtime, [clock, WEATHER], query)  # compiles the blocks it needs
    again = request_likelihoods(gen_runtime, [clock, WEATHER], query)
    store, gen_runtime.store = gen_runtime.store, None
    try:
        prefilled = request_likelihoods(gen_runtime, [clock, WEATHER], query)
    finally:
        gen_runtime.store = store
    assert again.decoded_tokens < first.decoded_tokens <= prefilled.decoded_tokens, (first, again, prefilled)
    assert again.per_tool == pytest.approx(first.per_tool, abs=1e-3)
    assert prefilled.per_tool == pytest.approx(first.per_tool, abs=1e-3)
    assert first.per_tool[0] > first.per_tool[1]


def test_scoring_blocks_compiled_ahead_leave_only_the_request_to_decode(gen_runtime: Runtime):
    gen_runtime.reset()
    query = "When does the sun set in Oslo?"
    sunset = ToolRecord.from_tool("", {"name": "sunset_time", "description": "Sunset time for a city."})
    tide = ToolRecord.from_tool("", {"name": "tide_table", "description": "High and low tides of a harbour."})
    assert compile_scoring(gen_runtime, [sunset, tide]) == 2
    assert compile_scoring(gen_runtime, [sunset, tide]) == 0  # already there
    ahead = request_likelihoods(gen_runtime, [sunset, tide], query)
    request_only = request_likelihoods(gen_runtime, [], query).decoded_tokens
    assert ahead.decoded_tokens == 3 * request_only, ahead  # each tool's text came from its block
    store, gen_runtime.store = gen_runtime.store, None
    try:
        prefilled = request_likelihoods(gen_runtime, [sunset, tide], query)
    finally:
        gen_runtime.store = store
    assert ahead.per_tool == pytest.approx(prefilled.per_tool, abs=1e-3)


def test_scoring_leaves_every_session_as_it_was(gen_runtime: Runtime):
    gen_runtime.reset()
    state = gen_runtime.open_session()
    gen_runtime.append_text(state, "Earlier request: hello\nArguments: {}\n", logits=False)
    before = (state.n_past, gen_runtime.ctx.seq_range(state.seq), gen_runtime.ctx.seq_range(gen_runtime.template))
    scored = request_likelihoods(gen_runtime, [EMAIL, WEATHER], "weather in Rome")
    after = (state.n_past, gen_runtime.ctx.seq_range(state.seq), gen_runtime.ctx.seq_range(gen_runtime.template))
    assert after == before and len(scored.per_tool) == 2
    assert request_likelihoods(gen_runtime, [EMAIL, WEATHER], "weather in Rome").per_tool == pytest.approx(
        scored.per_tool, abs=1e-3
    )


def test_more_candidates_than_scoring_sequences_are_scored_in_turns_each_as_it_scores_alone(gen_runtime: Runtime):
    gen_runtime.reset()
    query = "What is the weather in Paris?"
    tools = [
        ToolRecord.from_tool("", {"name": f"tool_{i}", "description": f"Tool number {i} of a long list."})
        for i in range(len(gen_runtime.scoring) + 2)
    ]
    tools[-1] = WEATHER  # in the last turn
    scored = request_likelihoods(gen_runtime, tools, query)
    assert len(scored.per_tool) == len(tools)
    assert max(range(len(tools)), key=scored.per_tool.__getitem__) == len(tools) - 1
    for i in (0, len(tools) - 1):
        alone = request_likelihoods(gen_runtime, [tools[i]], query)
        assert scored.per_tool[i] == pytest.approx(alone.per_tool[0], abs=1.0)  # batches differ in the last bits
    assert scored.without == pytest.approx(alone.without, abs=1.0)
