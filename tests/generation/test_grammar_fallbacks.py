"""Every schema gets a grammar that names its parameters: the converter's when it can, else a looser one
(`loosened`), else the skeleton of its property names and plain types; never an argument list."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from nexus_gateway.generation.grammar import grammar_for, loosened, skeleton

AWKWARD: dict[str, dict[str, Any]] = {
    "lookbehind pattern": {
        "type": "object",
        "properties": {"issue_key": {"type": "string", "pattern": r"[A-Z]+-\d+(?:-\d+)*"}},
        "required": ["issue_key"],
    },
    "array without items": {"type": "object", "properties": {"values": {"type": "array"}}, "required": ["values"]},
    "prefixItems": {
        "type": "object",
        "properties": {"pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}]}},
    },
    "a node with no type": {"type": "object", "properties": {"tags": {"default": None, "title": "Tags"}}},
    "format without type": {"type": "object", "properties": {"ip": {"format": "ipv4"}}, "required": ["ip"]},
    "not": {"type": "object", "properties": {"n": {"not": {}}, "flag": {"type": "boolean"}}, "required": ["flag"]},
    "long maxLength": {
        "type": "object",
        "properties": {"prompt": {"type": "string", "maxLength": 10000}, "mode": {"enum": ["a", "b"]}},
        "required": ["prompt"],
    },
    "type list and anyOf": {
        "type": "object",
        "properties": {
            "on": {"type": ["boolean", "null"]},
            "theme": {"anyOf": [{"type": "string", "enum": ["light", "dark"]}, {"type": "null"}]},
        },
        "required": ["on"],
    },
    "ref": {
        "type": "object",
        "$defs": {"w": {"type": "string", "enum": ["1h", "24h"]}},
        "properties": {"window": {"$ref": "#/$defs/w"}, "service": {"type": "string"}},
        "required": ["service"],
    },
}


@pytest.mark.parametrize("name", sorted(AWKWARD))
def test_an_awkward_schema_gets_a_grammar_that_names_its_parameters(name: str):
    schema = AWKWARD[name]
    plan = grammar_for(schema)
    assert plan.kind != "generic", plan.reason
    for parameter in schema["properties"]:
        assert f'\\"{parameter}\\"' in plan.gbnf, (parameter, plan.gbnf[:400])


def test_loosening_drops_what_the_converter_lacks_and_keeps_types_enums_and_required():
    schema = {
        "type": "object",
        "properties": {
            "key": {"type": "string", "pattern": "(?:x)", "description": "d", "maxLength": 5000},
            "kind": {"enum": ["a", "b"], "title": "Kind"},
            "list": {"type": "array", "prefixItems": [{"type": "string"}]},
        },
        "required": ["key"],
    }
    assert loosened(schema) == {
        "type": "object",
        "properties": {
            "key": {"type": "string"},
            "kind": {"enum": ["a", "b"]},
            "list": {"type": "array", "items": {"type": ["string", "number", "boolean", "object", "null"]}},
        },
        "required": ["key"],
    }


def test_the_skeleton_keeps_names_plain_types_short_enums_and_required_only():
    schema = {
        "type": "object",
        "properties": {
            "flag": {"type": "boolean"},
            "zone": {"type": "string", "enum": [f"z{i}" for i in range(500)]},
            "ids": {"type": "array", "items": {"type": "integer"}},
            "odd": {"oneOf": [{"type": "string"}, {"type": "object"}]},
        },
        "required": ["flag"],
    }
    shape = skeleton(schema)
    assert shape["required"] == ["flag"] and shape["additionalProperties"] is False
    assert shape["properties"]["flag"] == {"type": "boolean"}
    assert shape["properties"]["zone"] == {"type": "string"}  # too many values for a grammar: a string
    assert shape["properties"]["ids"] == {"type": "array", "items": {"type": "integer"}}
    assert "type" in shape["properties"]["odd"]


REPO = Path(__file__).resolve().parents[2]
DEV_DATA = Path(os.environ.get("NEXUS_DEV_DATA") or REPO.parent / "shared" / "data" / "dev")
"""The development data sets (the 843-tool real catalog, LiveMCPBench's tools) where they sit beside the checkout."""
CATALOGS = [
    REPO / "nexus_gateway/evals/data/arguments/real_mcp/tools.json",
    REPO / "nexus_gateway/evals/data/arguments/bfcl_style/tools.json",
    REPO / "nexus_gateway/evals/data/arguments/bfcl_fresh/tools.json",
    DEV_DATA / "real_servers/tools.json",
    DEV_DATA / "livemcpbench/tools.json",
]


@pytest.mark.parametrize("path", CATALOGS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_every_tool_of_the_real_catalogs_builds_a_grammar_naming_its_parameters(path: Path):
    if not path.exists():
        pytest.skip(f"{path} is not on this machine (the development data sets)")
    tools = json.loads(path.read_text())
    kinds = {}
    for tool in tools:
        plan = grammar_for(tool.get("inputSchema") or {})
        kinds[tool["name"]] = plan.kind
        assert plan.empty or plan.gbnf
    assert "generic" not in kinds.values(), [name for name, kind in kinds.items() if kind == "generic"]
