"""A value that is the request copied is no evidence of fit; narrowing finds the request's values of a kind."""

from nexus_gateway.generation.grammar import grammar_for
from nexus_gateway.generation.grounding import echoes, grounding, narrowed_schema, narrowing, request_values

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
ZONE = {
    "type": "object",
    "properties": {"timezone": {"type": "string", "description": "IANA timezone name (e.g., 'America/New_York')"}},
    "required": ["timezone"],
}


def test_the_request_copied_into_a_free_text_parameter_is_supported_but_echoed_and_no_evidence():
    request = "what time is it in Paris?"
    copied = grounding(request, TEXT, {"text": "what time is it in Paris"})
    assert (copied.supported, copied.invented, copied.echoed, copied.evidence) == (1, 0, 1, 0)
    taken = grounding("read the file /tmp/hello.txt", TEXT, {"text": "/tmp/hello.txt"})
    assert (taken.echoed, taken.evidence) == (0, 1)


def test_one_word_of_the_request_put_into_several_parameters_is_no_evidence_for_any_of_them():
    schema = {
        "type": "object",
        "properties": {name: {"type": "string"} for name in ("user_name", "script_id", "deployment_id")},
        "required": ["user_name", "script_id", "deployment_id"],
    }
    request = "restart the web deployment"
    slotted = grounding(request, schema, {"user_name": "restart", "script_id": "restart", "deployment_id": "restart"})
    assert (slotted.supported, slotted.invented, slotted.echoed, slotted.evidence) == (3, 0, 3, 0)
    two = {
        "type": "object",
        "properties": {"src": {"type": "string"}, "dst": {"type": "string"}},
        "required": ["src", "dst"],
    }
    moved = grounding("copy /a.txt to /b.txt", two, {"src": "/a.txt", "dst": "/b.txt"})
    assert (moved.echoed, moved.evidence) == (0, 2)


def test_the_name_part_of_an_email_address_is_not_a_value_of_the_request():
    form = {"type": "object", "properties": {"form_id": {"type": "string"}}, "required": ["form_id"]}
    request = "type hello@acme.io into the email field"
    assert grounding(request, form, {"form_id": "hello"}).invented == 1
    assert grounding(request, form, {"form_id": "hello@acme.io"}).invented == 0
    assert grounding("message @sam about lunch", form, {"form_id": "sam"}).invented == 0  # a handle's name is


def test_an_echo_is_the_whole_request_or_nearly_and_a_value_taken_from_a_short_request_is_not():
    assert echoes("What time is it in Paris", "what time is it in Paris?")
    assert echoes("please find the latest news about the Mars rover", "find the latest news about the Mars rover")
    assert not echoes("~/notes/todo.md", "read ~/notes/todo.md")  # 3 words of 4
    assert not echoes("best pizza in Naples", "search the web for best pizza in Naples")
    assert not echoes("hi there", "hi there")  # too short to tell a copy from a value
    assert not echoes(42, "what is 42 times 42")


def test_narrowing_gives_the_zone_a_request_names_by_its_place():
    assert narrowing("what time is it in Paris?", ZONE, ["timezone"]) == {"timezone": ["Europe/Paris"]}
    assert narrowing("what time is it in New York", ZONE, ["timezone"]) == {"timezone": ["America/New_York"]}
    assert narrowing("what time is it?", ZONE, ["timezone"]) == {}  # none named: nothing to narrow to


def test_request_values_of_each_kind_come_whole_without_the_sentences_punctuation():
    assert request_values("read the file /work/a/hello.txt.", "path", {"type": "string"}) == ["/work/a/hello.txt"]
    assert request_values("open https://example.org/a?b=1, then", "url", {"type": "string"}) == [
        "https://example.org/a?b=1"
    ]
    assert request_values("mail bo@x.org now", "to", {"type": "string", "format": "email"}) == ["bo@x.org"]
    assert request_values("book 12 seats at 3.5", "n", {"type": "integer"}) == [12]
    assert request_values("book 12 seats at 3.5", "n", {"type": "number"}) == [12, 3.5]
    assert request_values("due 2026-12-24", "due", {"type": "string", "format": "date"}) == ["2026-12-24"]
    assert request_values("anything at all", "note", {"type": "string"}) == []  # a free text: no kind


def test_a_narrowed_schema_allows_only_the_given_values_and_leaves_the_tools_own_schema_alone():
    narrowed = narrowed_schema(ZONE, {"timezone": ["Europe/Paris"]})
    assert narrowed["properties"]["timezone"]["enum"] == ["Europe/Paris"]
    assert "enum" not in ZONE["properties"]["timezone"]
    gbnf = grammar_for(narrowed).gbnf
    assert "Europe/Paris" in gbnf and "Asia/Tokyo" not in gbnf
