from nexus_gateway.catalog import Catalog, content_hash


def tool(name: str, description: str = "d", **schema: object) -> dict:
    return {"name": name, "description": description, "inputSchema": {"type": "object", **schema}}


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


def test_a_name_collision_keeps_the_server_earlier_in_the_config_whichever_lists_first():
    catalog = Catalog(prefixes={"a": "", "b": ""})
    catalog.replace_server("b", [tool("search"), tool("only_b")])
    diff = catalog.replace_server("a", [tool("search")])
    assert diff.added == ("search",) and catalog.get("search").server == "a"  # type: ignore[union-attr]
    assert [(c.name, c.server, c.tool, c.owner) for c in catalog.collisions] == [("search", "b", "search", "a")]
    assert [record.name for record in catalog if record.server == "b"] == ["only_b"]
    catalog.replace_server("b", [tool("search"), tool("only_b")])  # b re-listing does not take it back
    assert catalog.get("search").server == "a"  # type: ignore[union-attr]
    catalog.replace_server("a", [])  # the name is free: b's tool comes back
    assert catalog.get("search").server == "b" and not catalog.collisions  # type: ignore[union-attr]
