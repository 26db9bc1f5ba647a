"""Constrained decoding with the real default model: valid JSON in every mode, sessions left intact."""

import pytest

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.catalog.validation import schema_problems
from nexus_gateway.engine.runtime import Runtime
from nexus_gateway.generation.generator import FORMS
from nexus_gateway.generation.grammar import grammar_for, parse_object
from tests.engine.conftest import EMAIL, WEATHER, decode_alone


@pytest.mark.parametrize("mode", FORMS)
def test_arguments_parse_and_validate_in_every_mode(gen_runtime: Runtime, mode):
    gen_runtime.reset()
    state = gen_runtime.open_session()
    for record, query in ((WEATHER, "What is the weather in Paris?"), (EMAIL, "Email bob@example.com about lunch")):
        decoded = decode_alone(gen_runtime, state, record, query, grammar_for(record.input_schema), mode, 96)
        arguments = parse_object(decoded.text)
        assert decoded.complete and arguments is not None, decoded.text
        assert schema_problems(record.input_schema, arguments) == []
        assert decoded.ttft_s <= decoded.total_s


def test_decoding_leaves_the_session_exactly_where_it_was(gen_runtime: Runtime):
    gen_runtime.reset()
    state = gen_runtime.open_session()
    gen_runtime.append_text(state, "Earlier request: hello\nArguments: {}\n", logits=False)
    before = (state.n_past, gen_runtime.ctx.seq_range(state.seq))
    decode_alone(gen_runtime, state, WEATHER, "Weather in Rome", grammar_for(WEATHER.input_schema), "prefill", 64)
    assert (state.n_past, gen_runtime.ctx.seq_range(state.seq)) == before


def test_drafted_tokens_save_passes_and_leave_the_arguments_and_the_session_as_they_were(gen_runtime: Runtime):
    gen_runtime.reset()
    state = gen_runtime.open_session()
    before = (state.n_past, gen_runtime.ctx.seq_range(state.seq))
    query, plan = "Email bob@example.com about the team lunch on Friday", grammar_for(EMAIL.input_schema)
    one = decode_alone(gen_runtime, state, EMAIL, query, plan, "signature", 64, draft_tokens=0)
    drafted = decode_alone(gen_runtime, state, EMAIL, query, plan, "signature", 64, draft_tokens=3)
    assert one.passes == one.n_tokens - 1  # a token a pass (the closing brace is never decoded)
    assert drafted.passes < drafted.n_tokens  # the address and the subject copy the request: drafts were taken
    for decoded in (one, drafted):  # the same arguments, up to rounding (lookahead.py): compared by what they say
        arguments = parse_object(decoded.text)
        assert arguments is not None and arguments["to"] == "bob@example.com", decoded.text
        assert "lunch" in arguments["subject"].casefold(), decoded.text
    assert (state.n_past, gen_runtime.ctx.seq_range(state.seq)) == before  # rejected drafts' cells went too


def test_the_generic_grammar_still_yields_a_json_object(gen_runtime: Runtime, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("nexus_gateway.generation.grammar.MAX_GRAMMAR_CHARS", 10)  # any schema grammar is "too big"
    plan = grammar_for(WEATHER.input_schema)
    gen_runtime.reset()
    state = gen_runtime.open_session()
    decoded = decode_alone(gen_runtime, state, WEATHER, "Weather in Oslo", plan, "signature", 64)
    assert plan.kind == "generic" and parse_object(decoded.text) is not None, decoded.text


NOTE = ToolRecord(
    name="create_note",
    server="",
    upstream_name="create_note",
    description="Create a note.",
    input_schema={
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "priority": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "color": {"enum": ["red", "green"]},
        },
        "required": ["title", "priority", "tags"],
    },
)


@pytest.mark.parametrize("budget", [1, 2, 4])
def test_a_budget_that_runs_out_still_yields_arguments_that_parse_and_validate(gen_runtime: Runtime, budget):
    """The budget cuts the model off mid-value; the grammar closes the object with every required key."""
    gen_runtime.reset()
    state = gen_runtime.open_session()
    query = "Create a note titled quarterly budget review with the next steps, priority 3, tagged work and finance"
    decoded = decode_alone(gen_runtime, state, NOTE, query, grammar_for(NOTE.input_schema), "signature", budget)
    arguments = parse_object(decoded.text)
    assert decoded.complete and decoded.closed_early and arguments is not None, decoded.text
    assert schema_problems(NOTE.input_schema, arguments) == [] and {"title", "priority", "tags"} <= set(arguments)


ISSUE = ToolRecord(
    name="create_issue",
    server="",
    upstream_name="create_issue",
    description="Create an issue in a repository.",
    input_schema={
        "type": "object",
        "properties": {
            "repo": {"type": "string"},
            "title": {"type": "string"},
            "body": {"type": "string", "description": "The issue's description"},
            "assignee": {"type": "string"},
        },
        "required": ["repo", "title"],
    },
)


def test_an_optional_free_text_that_stops_copying_the_request_is_closed_there_and_decoding_goes_on(
    gen_runtime: Runtime,
):
    query = "open an issue in acme/api titled Login fails on Safari"
    plan = grammar_for(ISSUE.input_schema)
    gen_runtime.reset()
    free = decode_alone(gen_runtime, gen_runtime.open_session(), ISSUE, query, plan, "signature", 96)
    gen_runtime.reset()
    cut = decode_alone(
        gen_runtime, gen_runtime.open_session(), ISSUE, query, plan, "signature", 96, ("body", "assignee")
    )
    written, arguments = parse_object(free.text), parse_object(cut.text)
    assert written is not None and arguments is not None, (free.text, cut.text)
    assert "body" in written and written["body"].casefold() not in query.casefold(), written  # the model invents one
    assert cut.complete and "body" in cut.cut and not cut.closed_early, cut
    assert len(arguments["body"]) < len(written["body"]) and cut.n_tokens < free.n_tokens, (free.text, cut.text)
    assert {k: arguments[k] for k in ("repo", "title")} == {k: written[k] for k in ("repo", "title")}
    assert schema_problems(ISSUE.input_schema, arguments) == []
