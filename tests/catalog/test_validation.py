import pytest

from nexus_gateway.catalog.validation import schema_problems, validate_arguments
from nexus_gateway.errors import ArgumentsInvalid

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 14}},
    "required": ["city"],
    "additionalProperties": False,
}


def test_valid_arguments_pass():
    assert schema_problems(SCHEMA, {"city": "Oslo", "days": 3}) == []
    validate_arguments("weather", SCHEMA, {"city": "Oslo", "days": 3})


def test_problems_name_the_parameter_and_what_is_wrong():
    with pytest.raises(ArgumentsInvalid) as info:
        validate_arguments("weather", SCHEMA, {"days": 30, "unit": "C"})
    message = str(info.value)
    assert "'city' is a required property" in message
    assert "days: 30 is greater than the maximum of 14" in message
    assert "'unit' was unexpected" in message


def test_a_broken_upstream_schema_does_not_block_calls():
    assert schema_problems({"type": "object", "properties": {"x": {"type": "no-such-type"}}}, {"x": 1}) == []
