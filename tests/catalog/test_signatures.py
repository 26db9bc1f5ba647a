from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from nexus_gateway.catalog.signatures import shorten, signature

CREATE_EVENT = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "description": "Event title"},
        "start": {"type": "string", "format": "date-time"},
        "attendees": {"type": "array", "items": {"type": "string", "format": "email"}},
        "visibility": {"type": "string", "enum": ["default", "public", "private"]},
    },
    "required": ["title", "start"],
}


def test_signature_matches_the_design_example():
    line = signature("calendar__create_event", "Create a calendar event. Invites are sent.", CREATE_EVENT)
    assert line == (
        "calendar__create_event(title: str, start: datetime, attendees?: [email], "
        'visibility?: "default"|"public"|"private") - Create a calendar event'
    )


def test_refs_optional_unions_and_nested_objects_render_compactly():
    schema = {
        "type": "object",
        "$defs": {
            "Point": {
                "type": "object",
                "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                "required": ["x", "y"],
            }
        },
        "properties": {
            "at": {"$ref": "#/$defs/Point"},
            "label": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "count": {"type": ["integer", "null"]},
        },
        "required": ["at"],
    }
    assert signature("t", "", schema) == "t(at: {x: float, y: float}, label?: str, count?: int)"


def test_description_is_cut_to_the_budget():
    assert shorten("one two three four five. Second sentence.", 3) == "one two three..."
    assert shorten("Short one. Second sentence.", 10) == "Short one"


identifiers = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)
scalars = st.sampled_from([{"type": "string"}, {"type": "integer"}, {"type": "boolean"}, {"type": "number"}])
enums = st.lists(
    st.text(st.characters(codec="ascii", exclude_characters='"\\'), min_size=1, max_size=8),
    min_size=1,
    max_size=6,
    unique=True,
).map(lambda values: {"type": "string", "enum": values})


@st.composite
def schemas(draw: st.DrawFn) -> dict[str, Any]:
    properties = draw(st.dictionaries(identifiers, st.one_of(scalars, enums), min_size=0, max_size=8))
    required = draw(st.lists(st.sampled_from(sorted(properties)), unique=True)) if properties else []
    return {"type": "object", "properties": properties, "required": required}


@given(schemas(), st.text(max_size=400))
def test_required_parameters_and_enum_values_are_never_dropped(schema: dict[str, Any], description: str):
    line = signature("tool", description, schema)
    params = line.split(" - ", 1)[0]
    for name in schema["required"]:
        assert f"{name}: " in params
    for spec in schema["properties"].values():
        for value in spec.get("enum", []):
            assert f'"{value}"' in params


@given(schemas())
def test_optional_parameters_are_marked(schema: dict[str, Any]):
    line = signature("tool", "", schema)
    for name in schema["properties"]:
        mark = "" if name in schema["required"] else "?"
        assert f"{name}{mark}: " in line


def test_a_longer_summary_keeps_every_sentence_up_to_its_word_budget():
    description = "Stay informed with the latest financial updates. Covers stocks, cryptocurrencies, and more."
    assert signature("finance", description, None).endswith("- Stay informed with the latest financial updates")
    longer = signature("finance", description, None, max_words=48, first_sentence=False)
    assert longer == "finance() - " + description
    cut = signature("finance", description, None, max_words=9, first_sentence=False)
    assert cut == "finance() - Stay informed with the latest financial updates. Covers stocks,..."


def param(description: str, **spec: Any) -> str:
    schema = {"type": "object", "properties": {"p": {"description": description, **spec}}, "required": []}
    return signature("t", "", schema).removeprefix("t(").removesuffix(")")


def test_a_format_the_description_quotes_is_kept_after_the_type():
    assert param("The city, in the format 'City, ST', such as 'Berkeley, CA'.", type="string") == 'p?: str ("City, ST")'


def test_named_formats_keep_the_most_telling_one():
    assert param("Departure date in the format 'YYYY-MM-DD'.", type="string") == "p?: str (YYYY-MM-DD)"
    assert param("Time to convert in 24-hour format (HH:MM)", type="string") == "p?: str (HH:MM)"
    assert param("The three-letter ISO 4217 code of the currency.", type="string") == "p?: str (ISO 4217)"


def test_a_unit_a_range_and_a_default_of_a_number_are_kept():
    assert param("The duration of the timer in seconds.", type="integer") == "p?: int (seconds)"
    assert param("Number of results (1-20, default 10)", type="number") == "p?: float (1-20) = 10"
    assert param("How many", type="integer", minimum=1, maximum=4, default=1) == "p?: int (1-4) = 1"


def test_the_value_to_use_when_none_is_given_is_kept_unless_it_is_the_default():
    assert (
        param("Preferred airline. Use 'dontcare' when no preference.", type="string") == 'p?: str ("dontcare" if unset)'
    )
    enum = ["cheap", "dontcare"]
    said = param("Price range. Use 'dontcare' when not given.", type="string", enum=enum, default="dontcare")
    assert said == 'p?: "cheap"|"dontcare" = "dontcare"'


def test_an_example_is_kept_only_when_it_shows_a_form():
    assert param("The flight number, e.g. 'UA857'.", type="string") == 'p?: str (e.g. "UA857")'
    assert param("The stock ticker symbol, e.g. 'AAPL'.", type="string") == "p?: str"


def test_a_description_without_hints_adds_nothing():
    assert param("The title of the song.", type="string") == "p?: str"
