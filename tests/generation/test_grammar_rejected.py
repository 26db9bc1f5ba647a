"""A grammar llama.cpp will not parse (an escape it does not read, a repetition beyond its limits) is no failed
call: the generator decodes under the next looser grammar, remembers it for the tool, and the answer is still
judged against the tool's own schema."""

from __future__ import annotations

import anyio
import pytest

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.engine.runtime import Runtime
from nexus_gateway.generation import grammar
from nexus_gateway.generation.generator import ArgumentGenerator
from nexus_gateway.generation.grammar import grammar_for, looser
from tests.generation.test_generator import RuntimeEngine

pytestmark = pytest.mark.anyio

WHOIS = ToolRecord.from_tool(
    "whois",
    {
        "name": "whois_as",
        "description": "Look up an autonomous system number.",
        "inputSchema": {
            "type": "object",
            "properties": {"asn": {"type": "string", "pattern": r"^AS\d+$", "description": "e.g. AS13335"}},
            "required": ["asn"],
        },
    },
)


def test_the_looser_grammars_differ_from_the_rejected_one_and_end_with_the_generic_object():
    plan = grammar_for(WHOIS.input_schema)
    plans = looser(WHOIS.input_schema, plan)
    assert [p.kind for p in plans][-1] == "generic" and all(p.gbnf != plan.gbnf for p in plans)
    assert all("llama.cpp rejected" in p.reason for p in plans)


async def test_a_pattern_with_shorthand_classes_is_decoded_under_the_schemas_own_grammar(gen_runtime: Runtime):
    gen_runtime.reset()
    engine = RuntimeEngine(gen_runtime)
    generator = ArgumentGenerator(engine)
    with anyio.fail_after(120):
        generated = await generator.generate(await engine.open_session(), WHOIS, "who owns AS13335?")
    assert generated.grammar == "schema" and generator.plan(WHOIS).kind == "schema"
    assert generated.arguments == {"asn": "AS13335"} and generated.schema_valid, generated.text


async def test_a_grammar_llama_cpp_rejects_falls_back_to_a_looser_one_and_the_answer_validates(
    gen_runtime: Runtime, monkeypatch: pytest.MonkeyPatch
):
    # the converter's own writing of `\d`, an escape llama.cpp does not read (what `converter_pattern` mends)
    monkeypatch.setattr(grammar, "converter_pattern", lambda pattern: pattern)
    gen_runtime.reset()
    engine = RuntimeEngine(gen_runtime)
    generator = ArgumentGenerator(engine)
    with anyio.fail_after(120):
        generated = await generator.generate(await engine.open_session(), WHOIS, "who owns AS13335?")
    assert generated.grammar.startswith("loose: llama.cpp rejected"), generated.grammar
    assert generated.arguments == {"asn": "AS13335"} and generated.schema_valid, generated.text
    assert generator.plan(WHOIS).kind == "loose"  # remembered: the rejected grammar is not tried again
