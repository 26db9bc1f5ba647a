"""JSON Schema -> one-line compressed signature. Pure functions.

    calendar__create_event(title: str, start: datetime, attendees?: [email],
                           visibility?: "default"|"public"|"private") - Create a calendar event

Required parameters and enum values are never dropped; only the description is cut to a budget.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_FORMATS = {
    "date-time": "datetime",
    "date": "date",
    "time": "time",
    "email": "email",
    "uri": "url",
    "url": "url",
    "uuid": "uuid",
    "ipv4": "ip",
    "ipv6": "ip",
    "hostname": "host",
}
_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "null"}
_MAX_DEPTH = 2
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return schema
    node: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(node, Mapping) or part not in node:
            return schema
        node = node[part]
    return node if isinstance(node, Mapping) else schema


def _literal(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def type_expr(schema: Any, root: Mapping[str, Any] | None = None, depth: int = 0) -> str:
    """A compact type expression for one schema node."""
    if not isinstance(schema, Mapping):
        return "any"
    root = root if root is not None else schema
    schema = _resolve(schema, root)
    if "enum" in schema and isinstance(schema["enum"], list):
        return "|".join(_literal(value) for value in schema["enum"]) or "any"
    if "const" in schema:
        return _literal(schema["const"])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            options = [type_expr(option, root, depth) for option in schema[key]]
            non_null = [option for option in options if option != "null"]
            if len(non_null) < len(options) and len(non_null) == 1:
                return non_null[0]  # Optional[X]: optionality already shows as `?`
            return "|".join(dict.fromkeys(options)) or "any"
    if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
        return type_expr(schema["allOf"][0], root, depth)
    kind = schema.get("type")
    if isinstance(kind, list):
        names = [type_expr({**schema, "type": k}, root, depth) for k in kind if k != "null"]
        return "|".join(dict.fromkeys(names)) or "null"
    if kind == "string" or (kind is None and "format" in schema):
        return _FORMATS.get(str(schema.get("format", "")), "str")
    if kind == "array":
        items = schema.get("items")
        return f"[{type_expr(items, root, depth + 1)}]" if items else "[any]"
    if kind == "object" or (kind is None and "properties" in schema):
        properties = schema.get("properties")
        if not isinstance(properties, Mapping) or not properties or depth >= _MAX_DEPTH:
            return "obj"
        return "{" + ", ".join(_params(schema, root, depth + 1)) + "}"
    if isinstance(kind, str):
        return _SCALARS.get(kind, kind)
    return "any"


def _params(schema: Mapping[str, Any], root: Mapping[str, Any], depth: int) -> list[str]:
    """Top-level parameters all appear; inside nested objects only required fields do, and `...` marks
    the optional ones left out (describe_tool shows them)."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return []
    listed = schema.get("required")
    required: list[Any] = listed if isinstance(listed, list) else []
    ordered = [name for name in required if name in properties]
    optional = [name for name in properties if name not in ordered]
    parts = [f"{name}: {type_expr(properties[name], root, depth)}" for name in ordered]
    if depth == 0:
        parts += [f"{name}?: {type_expr(properties[name], root, depth)}" for name in optional]
    elif optional:
        parts.append("...")
    return parts


def shorten(text: str, max_words: int) -> str:
    """First sentence of `text`, cut to `max_words` words."""
    text = " ".join(text.split())
    if not text:
        return ""
    first = _SENTENCE_END.split(text, maxsplit=1)[0].rstrip(".")
    words = first.split(" ")
    if len(words) <= max_words:
        return first
    return " ".join(words[:max_words]) + "..."


def clip(text: str, max_words: int) -> str:
    """All of `text` (every sentence), cut to `max_words` words."""
    words = text.split()
    return " ".join(words[:max_words]) + ("..." if len(words) > max_words else "")


def signature(
    name: str,
    description: str,
    input_schema: Mapping[str, Any] | None,
    *,
    max_words: int = 12,
    first_sentence: bool = True,
) -> str:
    """One line a model can call the tool from: name, typed parameters, a short description (its first
    sentence, or with `first_sentence=False` as many sentences as fit in `max_words`)."""
    schema = input_schema or {}
    params = ", ".join(_params(schema, schema, 0))
    summary = shorten(description, max_words) if first_sentence else clip(description, max_words)
    return f"{name}({params})" + (f" - {summary}" if summary else "")
