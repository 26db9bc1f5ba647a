"""A tool's input schema as the argument rules read it: local `$ref`s followed, optional wrappers taken off.

Servers written with pydantic (FastMCP and most Python MCP servers) spell an optional parameter
`{"anyOf": [{"type": "integer"}, {"type": "null"}], "default": null}` and an enum parameter
`{"$ref": "#/$defs/SortOrder"}`. The rules that read a parameter's type, enum, unit or format (stated.py,
grounding.py, formats.py, durations.py) look for `type`, `enum` and `properties` on the parameter itself, so
they would pass such parameters by. `plain` gives them the same schema written flat:

    {"$ref": "#/$defs/X", "description": d}      -> X's keys, with `description` d (the reference's own
                                                    keys win)
    {"anyOf": [S, {"type": "null"}], ...}         -> S's keys merged in (the outer keys win)
    {"type": ["string", "null"]}                  -> {"type": "string"}
    {"type": "string", "description": "One of     -> the same with `"enum": ["list", "get"]` (listed.py)
     \"list\", \"get\"."}

at every depth (properties, items). Decoding and validation keep the tool's own schema: a value valid for
the flat form is valid for the original (null is only left out), so the flat one is for reading only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nexus_gateway.generation.listed import described_choices

_DEPTH = 8
_ALTERNATIVES = ("anyOf", "oneOf")


def plain(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` written flat (module docstring); a new dict, the input is left as it is."""
    return _flat(schema, schema, (), 0)


def _flat(spec: Mapping[str, Any], root: Mapping[str, Any], seen: tuple[str, ...], depth: int) -> dict[str, Any]:
    if depth > _DEPTH:
        return dict(spec)
    flat = dict(spec)
    ref = flat.get("$ref")
    if isinstance(ref, str) and ref not in seen and (target := _resolved(ref, root)) is not None:
        del flat["$ref"]
        flat = {**_flat(target, root, (*seen, ref), depth + 1), **flat}
        seen = (*seen, ref)
    for key in _ALTERNATIVES:
        options = flat.get(key)
        if not isinstance(options, list):
            continue
        kept = [option for option in options if not (isinstance(option, Mapping) and option.get("type") == "null")]
        if len(kept) == 1 and isinstance(kept[0], Mapping) and len(kept) < len(options):
            del flat[key]
            flat = {**_flat(kept[0], root, seen, depth + 1), **flat}
    kind = flat.get("type")
    if isinstance(kind, list) and "null" in kind:
        rest = [name for name in kind if name != "null"]
        flat["type"] = rest[0] if len(rest) == 1 else rest
    properties = flat.get("properties")
    if isinstance(properties, Mapping):
        flat["properties"] = {
            name: _listed(name, _flat(member, root, seen, depth + 1)) if isinstance(member, Mapping) else member
            for name, member in properties.items()
        }
    items = flat.get("items")
    if isinstance(items, Mapping):
        flat["items"] = _flat(items, root, seen, depth + 1)
    return flat


def _listed(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """`spec` with the choices its description lists as its `enum` (listed.py), for a plain string."""
    if spec.get("type") != "string" or any(key in spec for key in ("enum", "const", "format", "pattern")):
        return spec
    choices = described_choices(name, str(spec.get("description") or ""))
    return {**spec, "enum": choices} if choices else spec


def _resolved(ref: str, root: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """What a local reference (`#/$defs/X`, `#/definitions/X`) names in `root`; None for any other."""
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, Mapping) else None
