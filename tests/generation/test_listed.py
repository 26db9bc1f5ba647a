"""Choices a description lists in prose (listed.py), read as the parameter's enum by the argument rules."""

from nexus_gateway.generation.generator import _grounded
from nexus_gateway.generation.grounding import ungrounded
from nexus_gateway.generation.listed import described_choices
from nexus_gateway.generation.plain import plain


def test_lists_a_description_gives_as_choices_are_read_and_examples_are_not():
    hubspot = "The type of HubSpot object. Valid values include: companies, contacts, deals, line_items. For custom"
    assert described_choices("objectType", hubspot) == ["companies", "contacts", "deals", "line_items"]
    action = 'Action to perform - "create", "list", "update", or "delete".'
    assert described_choices("action", action) == ["create", "list", "update", "delete"]
    marked = "Options: 'markdown' (default), 'wiki', 'storage', or 'adf'."
    assert described_choices("content_format", marked) == ["markdown", "wiki", "storage", "adf"]
    assert described_choices("style", "One of NONE, SUPERSCRIPT, SUBSCRIPT") == ["NONE", "SUPERSCRIPT", "SUBSCRIPT"]
    assert described_choices("key", 'Key to press. E.g., "Enter", "Tab", or "Escape"') is None
    assert described_choices("task_id", 'The ID. Required for "update", "delete", and "move" actions.') is None
    assert described_choices("query", "Search query (max 400 chars, 50 words)") is None


SEARCH = {
    "type": "object",
    "properties": {
        "objectType": {"type": "string", "description": "Valid values include: companies, contacts, deals."},
        "query": {"type": "string"},
    },
    "required": ["objectType"],
}


def test_a_value_off_the_described_list_becomes_the_choice_it_spells_or_the_one_the_request_names():
    view = plain(SEARCH)
    assert view["properties"]["objectType"]["enum"] == ["companies", "contacts", "deals"]
    assert "enum" not in SEARCH["properties"]["objectType"]  # the tool's own schema is left as it is
    fixed, _ = _grounded(
        "look up the hubspot contact for jen@x.io", view, {"objectType": "contact", "query": "jen@x.io"}
    )
    assert fixed == {"objectType": "contacts", "query": "jen@x.io"}
    fixed, _ = _grounded("list 20 hubspot deals with dealname", view, {"objectType": "dealname"})
    assert fixed == {"objectType": "deals"}
    # a value off the list that nothing mends is a free value: the request must hold it
    assert ungrounded("find my stuff", view, {"objectType": "widgets"}) == ["objectType"]


def test_the_choice_the_request_names_is_not_given_to_a_second_parameter_that_already_has_it():
    types = {"type": "string", "description": "Valid values include: companies, contacts, deals."}
    properties = {"objectType": types, "toObjectType": types, "objectId": {"type": "string"}}
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    arguments = {"objectType": "hubspot_objects", "objectId": "acme.com", "toObjectType": "contacts"}
    fixed, _ = _grounded("find hubspot contacts with an acme.com email", plain(schema), arguments)
    assert fixed == arguments  # the one choice named is toObjectType's: objectType stays what the model wrote
