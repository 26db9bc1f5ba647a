import itertools
from typing import Any

import jsonschema
import pytest
from jsonschema import validators

from nexus_gateway.catalog._quick_schema import quick_check
from nexus_gateway.catalog.validation import schema_problems

ECHO = {
    "type": "object",
    "title": "echoArguments",
    "properties": {
        "text": {"title": "Text", "type": "string"},
        "repeat": {"default": 1, "title": "Repeat", "type": "integer"},
    },
    "required": ["text"],
}
PLAIN = [
    ECHO,
    {
        "type": "object",
        "properties": {
            "unit": {"enum": ["C", "F"]},
            "days": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"},
            "tags": {"type": "array"},
            "extra": {"type": "object"},
            "either": {"type": ["string", "integer"]},
        },
        "additionalProperties": False,
    },
    {"type": "object", "$schema": "http://json-schema.org/draft-04/schema#", "properties": {"n": {"type": "integer"}}},
    {"type": "object"},
]
NOT_PLAIN = [
    {"type": "object", "properties": {"days": {"type": "integer", "minimum": 1}}},
    {"type": "object", "properties": {"name": {"type": "string", "pattern": "^a"}}},
    {"type": "object", "properties": {"when": {"type": "string", "format": "date"}}},
    {"type": "object", "properties": {"inner": {"type": "object", "properties": {"x": {"type": "string"}}}}},
    {"type": "object", "properties": {"x": {"$ref": "#/$defs/x"}}, "$defs": {"x": {"type": "string"}}},
    {"type": "object", "additionalProperties": {"type": "string"}},
    {"type": "object", "properties": {"level": {"enum": [1, 2]}}},
    {"type": "object", "$schema": "http://json-schema.org/draft-03/schema#"},
    {"type": "object", "properties": {"x": {"type": "no-such-type"}}},
    {"properties": {"x": {"type": "string"}}},
]
VALUES: list[Any] = ["a", "", "C", "K", 0, 3, -7, 2.0, 2.5, True, False, None, [], [1], {}, {"a": 1}]
NAMES = ["text", "repeat", "unit", "days", "ratio", "flag", "tags", "extra", "either", "n", "other"]


def jsonschema_says_valid(schema: dict[str, Any], arguments: dict[str, Any]) -> bool:
    cls = validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER).is_valid(arguments)


def argument_sets() -> list[dict[str, Any]]:
    sets: list[dict[str, Any]] = [{}]
    for name, value in itertools.product(NAMES, VALUES):
        sets.append({name: value})
        sets.append({"text": "ping", name: value})
    return sets


@pytest.mark.parametrize("schema", PLAIN, ids=range(len(PLAIN)))
def test_the_quick_check_says_valid_only_where_jsonschema_does(schema: dict[str, Any]):
    check = quick_check(schema)
    assert check is not None
    said_valid = 0
    for arguments in argument_sets():
        if check(arguments):
            said_valid += 1
            assert jsonschema_says_valid(schema, arguments), arguments
    assert said_valid > 0


def test_the_quick_check_leaves_integral_floats_and_booleans_to_jsonschema():
    check = quick_check(ECHO)
    assert check is not None
    assert check({"text": "ping", "repeat": 2})
    assert not check({"text": "ping", "repeat": 2.0})  # an integer to jsonschema: it says so, not the quick check
    assert not check({"text": "ping", "repeat": True})  # never an integer
    assert schema_problems(ECHO, {"text": "ping", "repeat": 2.0}, key="echo") == []
    problems = schema_problems(ECHO, {"text": "ping", "repeat": True}, key="echo")
    assert problems == ["repeat: True is not of type 'integer'"]


@pytest.mark.parametrize("schema", NOT_PLAIN, ids=range(len(NOT_PLAIN)))
def test_a_schema_with_anything_beyond_plain_types_gets_no_quick_check(schema: dict[str, Any]):
    assert quick_check(schema) is None


def test_arguments_that_fail_the_quick_check_are_worded_by_jsonschema():
    schema = PLAIN[1]
    problems = schema_problems(schema, {"unit": "K", "flag": 1, "surplus": 0}, key="plain-1")
    assert problems == [
        "(arguments): Additional properties are not allowed ('surplus' was unexpected)",
        "flag: 1 is not of type 'boolean'",
        "unit: 'K' is not one of ['C', 'F']",
    ]
