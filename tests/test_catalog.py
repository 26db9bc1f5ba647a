import re

from hypothesis import given
from hypothesis import strategies as st

from nexus_gateway.catalog import Catalog, content_hash, namespaced_name

VALID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
names = st.text(min_size=1, max_size=90)


def tool(name: str, description: str = "d", **schema: object) -> dict:
    return {"name": name, "description": description, "inputSchema": {"type": "object", **schema}}


@given(names, names)
def test_namespaced_names_are_always_valid_mcp_tool_names(server: str, name: str):
    assert VALID.match(namespaced_name(server, name))


@given(names, names)
def test_namespacing_is_deterministic(server: str, name: str):
    assert namespaced_name(server, name) == namespaced_name(server, name)


@given(st.lists(st.tuples(names, names), min_size=2, max_size=30, unique=True))
def test_distinct_pairs_never_collide(pairs: list[tuple[str, str]]):
    assert len({namespaced_name(server, name) for server, name in pairs}) == len(pairs)


def test_plain_names_stay_readable():
    assert namespaced_name("calendar", "create_event") == "calendar__create_event"
    assert namespaced_name("a__b", "c") != namespaced_name("a", "b__c")


def test_long_and_odd_names_are_shortened_with_a_hash_suffix():
    name = namespaced_name("my.server", "a tool with spaces and a very long name that keeps going and going")
    assert len(name) == 64 and name.startswith("my_server__a_tool_with_spaces")


def test_content_hash_changes_with_the_schema_only_when_it_changes():
    a = tool("t", properties={"x": {"type": "string"}})
    assert content_hash(a) == content_hash(dict(a))
    assert content_hash(a) != content_hash(tool("t", properties={"x": {"type": "integer"}}))


def test_replace_server_reports_added_removed_and_changed():
    catalog = Catalog()
    assert catalog.replace_server("s", [tool("a"), tool("b")]).added == ("s__a", "s__b")
    diff = catalog.replace_server("s", [tool("a", "new description"), tool("c")])
    assert diff.added == ("s__c",) and diff.removed == ("s__b",) and diff.changed == ()  # s__a is quarantined
    catalog.pins.approve(["s__a"])
    assert catalog.replace_server("s", [tool("a", "new description"), tool("c")]).changed == ("s__a",)
    assert [record.name for record in catalog] == ["s__a", "s__c"]
    assert catalog.get("s__a").upstream_name == "a"  # type: ignore[union-attr]


def test_server_names_cannot_steal_each_others_tools():
    catalog = Catalog()
    catalog.replace_server("a", [tool("x")])
    catalog.replace_server("b", [tool("y")])
    catalog.replace_server("a", [])
    assert [record.name for record in catalog] == ["b__y"]


def test_close_matches_suggest_the_namespaced_name():
    catalog = Catalog()
    catalog.replace_server("time", [tool("get_current_time")])
    assert catalog.close_matches("time_get_current_time") == ["time__get_current_time"]
