"""The flat schema the argument rules read (plain.py), and the rules that now see through it. No model."""

from nexus_gateway.generation.generator import _grounded
from nexus_gateway.generation.plain import plain
from nexus_gateway.generation.stated import unstatable

PYDANTIC = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None, "description": "At most."},
        "order": {"$ref": "#/$defs/Order", "description": "Sort order."},
        "tags": {"type": ["array", "null"], "items": {"$ref": "#/$defs/Order"}},
        "tree": {"$ref": "#/$defs/Node"},
    },
    "required": ["query"],
    "$defs": {
        "Order": {"type": "string", "enum": ["newest", "oldest"], "description": "How to sort."},
        "Node": {"type": "object", "properties": {"name": {"type": "string"}, "child": {"$ref": "#/$defs/Node"}}},
    },
}


def test_references_and_optional_wrappers_are_written_flat_and_the_input_is_kept():
    flat = plain(PYDANTIC)["properties"]
    assert flat["limit"] == {"type": "integer", "default": None, "description": "At most."}
    assert flat["order"] == {"type": "string", "enum": ["newest", "oldest"], "description": "Sort order."}
    assert flat["tags"] == {
        "type": "array",
        "items": {"type": "string", "enum": ["newest", "oldest"], "description": "How to sort."},
    }
    assert PYDANTIC["properties"]["order"] == {"$ref": "#/$defs/Order", "description": "Sort order."}


def test_a_schema_that_refers_to_itself_ends():
    node = plain(PYDANTIC)["properties"]["tree"]
    assert node["properties"]["name"] == {"type": "string"}
    assert node["properties"]["child"] == {"$ref": "#/$defs/Node"}  # met again on its own path: left as it is


def test_an_alternative_of_two_real_types_and_a_foreign_reference_are_left_alone():
    schema = {
        "type": "object",
        "properties": {
            "id": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
            "remote": {"$ref": "https://example.com/schema.json"},
        },
    }
    assert plain(schema) == schema


def test_the_rules_read_an_optional_enum_behind_a_reference():
    request = "search issues about login, oldest first"
    assert "order" not in unstatable(request, plain(PYDANTIC))
    assert "order" in unstatable("search issues about login", plain(PYDANTIC))
    arguments, dropped = _grounded("search issues about login", plain(PYDANTIC), {"query": "login", "order": "newest"})
    assert arguments == {"query": "login"} and dropped == ("order",)
