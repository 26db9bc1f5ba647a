"""What fails its schema is mended without guessing, re-decoded once with the error, and otherwise never
passed as valid; required identifiers the request does not give are reported missing."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.catalog.validation import schema_problems
from nexus_gateway.engine import Session
from nexus_gateway.generation.facts import missing_facts
from nexus_gateway.generation.generator import ArgumentGenerator, Generated
from nexus_gateway.generation.repair import coerced, with_defaults, without_invalid
from tests.generation.test_generator import ScriptedEngine, decoded

pytestmark = pytest.mark.anyio


def record(name: str, schema: dict[str, Any]) -> ToolRecord:
    return ToolRecord.from_tool("s", {"name": name, "description": f"{name}.", "inputSchema": schema})


PREFS = {
    "type": "object",
    "properties": {
        "notifications": {"type": ["boolean", "null"]},
        "count": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "label": {"type": "string"},
    },
    "required": ["notifications"],
}


@pytest.mark.parametrize(
    ("given_arguments", "expected"),
    [
        ({"notifications": "false"}, {"notifications": False}),
        ({"notifications": True, "count": "5"}, {"notifications": True, "count": 5}),
        ({"notifications": True, "count": 3.0}, {"notifications": True, "count": 3}),
        ({"notifications": True, "tags": "beach"}, {"notifications": True, "tags": ["beach"]}),
        ({"notifications": True, "label": 42}, {"notifications": True, "label": "42"}),
        ({"notifications": "maybe"}, {"notifications": "maybe"}),  # no spelling of a boolean: left as it is
    ],
)
def test_a_value_in_another_spelling_of_its_declared_type_is_coerced(
    given_arguments: dict[str, Any], expected: dict[str, Any]
):
    assert coerced(PREFS, given_arguments) == expected


def test_a_missing_required_parameter_with_a_default_gets_it_and_invalid_optional_ones_are_left_out():
    schema = {
        "type": "object",
        "properties": {"unit": {"type": "string", "default": "C"}, "days": {"type": "integer", "maximum": 14}},
        "required": ["unit"],
        "additionalProperties": False,
    }
    assert with_defaults(schema, {}) == {"unit": "C"}
    assert without_invalid(schema, {"unit": "C", "days": 40, "extra": 1}) == ({"unit": "C"}, ["days", "extra"])


async def test_booleans_written_as_strings_are_coerced_without_a_second_decoding():
    engine = ScriptedEngine(decoded('{"notifications": "true"}'))
    generated = await ArgumentGenerator(engine).generate(Session(0), record("prefs", PREFS), "turn notifications on")
    assert generated.arguments == {"notifications": True} and generated.schema_valid
    assert generated.repaired == ("coerced",) and generated.retries == 0 and len(engine.decoded) == 1


async def test_an_answer_that_still_fails_is_decoded_again_with_the_validation_error():
    schema = {
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}},
        "required": ["code"],
    }
    engine = ScriptedEngine(decoded('{"code": "usd"}'), decoded('{"code": "USD"}'))
    generator = ArgumentGenerator(engine)
    generated = await generator.generate(Session(0), record("rate", schema), "the rate of usd")
    assert generated.arguments == {"code": "USD"} and generated.schema_valid and generated.retries == 1
    assert "retried" in generated.repaired
    assert len(engine.decoded) == 2


async def test_a_required_value_that_never_validates_keeps_its_problems_so_it_is_never_called():
    schema = {
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}},
        "required": ["code"],
    }
    engine = ScriptedEngine(decoded('{"code": "usd"}'), decoded('{"code": "dollars"}'))
    generated = await ArgumentGenerator(engine).generate(Session(0), record("rate", schema), "the rate of usd")
    assert not generated.schema_valid and generated.problems and generated.retries == 1


async def test_a_required_identifier_the_request_does_not_give_is_reported_missing():
    schema = {"type": "object", "properties": {"symbol": {"type": "string"}}, "required": ["symbol"]}
    engine = ScriptedEngine(decoded('{"symbol": "SIE.DE"}'), decoded('{"symbol": "MSFT"}'))
    generator = ArgumentGenerator(engine)
    invented = await generator.generate(Session(0), record("quote", schema), "how is Siemens stock doing?")
    given_in_request = await generator.generate(Session(0), record("quote", schema), "price of MSFT")
    assert invented.missing == ("symbol",) and invented.schema_valid
    assert given_in_request.missing == ()


def test_only_identifiers_are_missing_facts_not_values_derived_from_the_request():
    schema = {
        "type": "object",
        "properties": {
            "channel_id": {"type": "string"},
            "currency": {"type": "string", "description": "ISO 4217 code"},
            "project_key": {"type": "string", "description": "Never assume what it might be, always ask the user."},
        },
        "required": ["channel_id", "currency", "project_key"],
    }
    arguments = {"channel_id": "C123", "currency": "EUR", "project_key": "WEB"}
    assert missing_facts(schema, arguments, ["channel_id", "currency", "project_key"]) == ["channel_id", "project_key"]


SPELLINGS = {
    "boolean": st.sampled_from([True, False, "true", "false", "yes", "no"]),
    "integer": st.one_of(st.integers(-50, 50), st.integers(-50, 50).map(str), st.integers(-5, 5).map(float)),
    "number": st.one_of(st.floats(-100, 100, allow_nan=False).map(lambda f: round(f, 2)), st.just("2.5")),
    "string": st.one_of(st.text("abcxyz ", min_size=1, max_size=8), st.integers(0, 9)),
    "array": st.one_of(st.lists(st.text("ab", min_size=1, max_size=3), max_size=3), st.text("ab", min_size=1)),
}
"""Each JSON type as a small model may write it: in its own spelling or another (a boolean as a string)."""


@st.composite
def awkward_cases(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    names = draw(st.lists(st.from_regex(r"[a-z]{1,8}", fullmatch=True), min_size=1, max_size=5, unique=True))
    properties, answer = {}, {}
    for name in names:
        kind = draw(st.sampled_from(sorted(SPELLINGS)))
        spec: dict[str, Any] = {"type": kind} if kind != "array" else {"type": "array", "items": {"type": "string"}}
        wrap = draw(st.sampled_from(["plain", "nullable", "anyOf", "ref"]))
        if wrap == "nullable":
            spec = {**spec, "type": [kind, "null"]} if kind != "array" else spec
        elif wrap == "anyOf":
            spec = {"anyOf": [spec, {"type": "null"}]}
        elif wrap == "ref":
            spec = {"$ref": f"#/$defs/{name}"}
        properties[name] = (spec, kind)
        answer[name] = draw(SPELLINGS[kind])
    required = draw(st.lists(st.sampled_from(names), unique=True))
    schema = {
        "type": "object",
        "$defs": {name: {"type": kind} for name, (spec, kind) in properties.items() if kind != "array"},
        "properties": {
            name: (spec if not (kind == "array" and "$ref" in spec) else {"type": "array", "items": {"type": "string"}})
            for name, (spec, kind) in properties.items()
        },
        "required": required,
        "additionalProperties": False,
    }
    return schema, answer


@settings(max_examples=60, deadline=None)
@given(awkward_cases())
def test_any_answer_with_each_value_in_some_spelling_of_its_type_comes_out_valid(case: tuple[dict, dict]):
    schema, answer = case
    engine = ScriptedEngine(decoded(json.dumps(answer)))
    request = f"a request with {' '.join(answer)} and 1"  # states every parameter: none is left out of the grammar

    async def generate() -> Generated:
        with anyio.fail_after(10):
            return await ArgumentGenerator(engine).generate(Session(0), record("t", schema), request)

    generated = anyio.run(generate)
    assert generated.schema_valid, (answer, generated.arguments, generated.problems)
    assert schema_problems(schema, generated.arguments or {}) == [] and len(engine.decoded) == 1
