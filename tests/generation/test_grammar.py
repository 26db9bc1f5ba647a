"""Grammar plans: schema grammars, the fallbacks and why, tools without parameters."""

import pytest

from nexus_gateway.generation.grammar import MAX_GRAMMAR_CHARS, converter_pattern, grammar_for, parse_object
from tests.engine.conftest import WEATHER


def test_an_ordinary_schema_gets_its_own_grammar_that_opens_with_a_required_key():
    plan = grammar_for(WEATHER.input_schema)
    assert plan.kind == "schema" and plan.opens_key and '"\\"city\\""' in plan.gbnf


def test_string_characters_exclude_raw_control_characters_and_are_bounded():
    gbnf = grammar_for(WEATHER.input_schema).gbnf
    char_rule = next(line for line in gbnf.splitlines() if line.startswith("char ::="))
    assert "\\x00-\\x1F" in char_rule and "char*" not in gbnf


def test_a_huge_enum_falls_back_to_the_skeleton_grammar_of_a_named_string_and_says_why():
    values = [f"option-number-{i}-with-a-long-name" for i in range(4000)]
    plan = grammar_for({"type": "object", "properties": {"pick": {"enum": values}}, "required": ["pick"]})
    assert plan.kind == "skeleton" and str(MAX_GRAMMAR_CHARS) in plan.reason and plan.opens_key
    assert '\\"pick\\"' in plan.gbnf and "string" in plan.gbnf


def test_a_tool_without_parameters_needs_no_decoding():
    assert grammar_for({"type": "object"}).empty and grammar_for({}).empty


def test_only_a_complete_json_object_parses():
    assert parse_object('{"a": 1') is None and parse_object("[1]") is None
    assert parse_object('{"a": 1}') == {"a": 1}


@pytest.mark.parametrize(
    ("pattern", "written"),
    [
        (r"^[A-Z][A-Z0-9_]+-\d+(?:-\d+)*$", "^[A-Z][A-Z0-9_]+-[0-9]+(-[0-9]+)*$"),  # a Jira issue key
        (r"^[\w.-]+$", "^[a-zA-Z0-9_.-]+$"),
        (r"^v\d+\.\d+$", "^v[0-9]+[.][0-9]+$"),
        (r"^[a\-z]+$", "^[az-]+$"),
        (r"^[^\d]+$", "^[^0-9]+$"),
        (r"^\D\W$", "^[^0-9][^a-zA-Z0-9_]$"),
        (r"\d+", None),  # unanchored: it matches inside a longer value, which a grammar cannot write
        (r"^(?=a)abc$", None),  # a lookahead
        (r"^(?i)abc$", None),  # a flag
        (r"^\s+$", None),
        (r"^(a)\1$", None),  # a back-reference
        (r"^[a-z", None),
    ],
)
def test_patterns_are_written_in_the_converters_dialect_or_left_to_validation(pattern: str, written: str | None):
    assert converter_pattern(pattern) == written


def test_a_schema_with_shorthand_classes_keeps_its_grammar_and_its_patterns():
    key = {"type": "string", "pattern": r"^[A-Z][A-Z0-9_]+-\d+(?:-\d+)*$"}
    schema = {
        "type": "object",
        "properties": {"issue_key": key, "note": {"type": "string", "pattern": r"\w"}},
        "required": ["issue_key"],
    }
    plan = grammar_for(schema)
    assert plan.kind == "schema", plan.reason
    assert '"-" [0-9]+ ("-" [0-9]+)*' in plan.gbnf and "\\d" not in plan.gbnf
    assert schema["properties"]["issue_key"] is key and key["pattern"].endswith(r"\d+)*$")  # the tool's own stays
