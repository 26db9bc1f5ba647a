"""JSON Schema -> one-line compressed signature. Pure functions.

    calendar__create_event(title: str, start: datetime, attendees?: [email],
                           visibility?: "default"|"public"|"private") - Create a calendar event

Required parameters and enum values are never dropped; only the description is cut to a budget. What
a parameter's own description says of how to fill it is kept in short form after its type (`hints`):
its format (`"City, ST"`, `YYYY-MM-DD`, `ISO 4217`), unit (`seconds`), range (`1-20`), the value to use
when the request gives none (`"dontcare" if unset`) and its default (`= 10`), so a model filling the
call from the signature alone writes what the tool expects:

    find_restaurants(location: str ("City, ST"), price?: "cheap"|"pricey"|"dontcare" = "dontcare")
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


def resolve_ref(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """What a local `$ref` (`#/...`) in `schema` points to inside `root`; `schema` itself when it has none or it
    does not resolve."""
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
    schema = resolve_ref(schema, root)
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


_QUOTED = r"""['"`\u2018\u201c]([^'"`\u2019\u201d]{1,28})['"`\u2019\u201d]"""
_FORMAT_QUOTED = re.compile(r"\b(?:format|form|formatted|formatted as|like)\b[^'\"`.;]{0,24}?" + _QUOTED, re.IGNORECASE)
_FORMAT_TOKENS = (
    re.compile(r"\b(YYYY-MM-DD(?:[T ]HH:MM(?::SS)?)?|YYYY-MM|HH:MM(?::SS)?)\b"),
    re.compile(
        r"\b(ISO[ -]?8601|RFC ?3339|ISO 4217|ISO 3166(?:-1)?(?: alpha-2)?|ISO 639-1|IATA|E\.164|24-hour"
        r"|Unix (?:timestamp|time)|IANA|SAN|JQL|SQL|cron|semver)\b"
    ),
)
"""Named formats, the most telling first (`HH:MM` over `24-hour`)."""
_UNIT = re.compile(
    r"\b(?:in|as)\s+(milliseconds|seconds|minutes|hours|days|weeks|months|years|meters|metres|kilometers|km|miles"
    r"|pixels|px|kilograms|kg|pounds|lbs|centimeters|cm|inches|bytes|megabytes|MB|percent|degrees|decimal)\b",
    re.IGNORECASE,
)
_RANGE = re.compile(r"\b(?:from |between )?(-?\d+(?:\.\d+)?)\s*(?:-|to|and|\u2013)\s*(-?\d+(?:\.\d+)?)\b")
_MAX = re.compile(r"\bmax(?:imum)?[.:]?\s*(?:of\s*)?(\d[\d,]*)\b", re.IGNORECASE)
_UNSET = re.compile(
    r"\buse\s+" + _QUOTED + r"\s*(?:as [^,.;]{0,30}?)?\s*(?:when|if|for)\s+(?:it is\s+|the user gives\s+)?"
    r"(?:not|no|none|any|nothing|unspecified)\b",
    re.IGNORECASE,
)
_DEFAULT = re.compile(
    r"\bdefaults?(?:\s+(?:is|to|value(?: is)?))?\s*[:=]?\s*(?:" + _QUOTED + r"|(-?\d+(?:\.\d+)?|true|false)\b)",
    re.IGNORECASE,
)
_EXAMPLE = re.compile(r"\b(?:e\.g\.|eg\.|for example|such as)[,:]?\s*" + _QUOTED, re.IGNORECASE)
_MAX_HINTS = 3
_FORMAT_CHARS = re.compile(r"[\d,/:=@.\-]")
"""An example is kept when it shows a form (digits, separators), not when it is only a sample value that a
model might copy as is (`"AAPL"`, `"Germany"`)."""


def _range(spec: Mapping[str, Any], text: str) -> str | None:
    low, high = spec.get("minimum"), spec.get("maximum")
    if isinstance(low, (int, float)) and isinstance(high, (int, float)) and not isinstance(low, bool):
        return f"{_literal(low)}-{_literal(high)}"
    if isinstance(high, (int, float)) and not isinstance(high, bool):
        return f"max {_literal(high)}"
    found = _RANGE.search(text)
    if found:
        return f"{found.group(1)}-{found.group(2)}"
    most = _MAX.search(text)
    return f"max {most.group(1).replace(',', '')}" if most else None


def hints(spec: Any, kind: str) -> tuple[list[str], str | None]:
    """What a parameter's description (and schema) says of how to fill it, short: notes for after its type
    (a format, a unit, a range, the value to use when none is given, an example) and its default."""
    if not isinstance(spec, Mapping):
        return [], None
    text = " ".join(str(spec.get("description") or "").split())
    notes: list[str] = []
    value = spec.get("default")
    unset = _UNSET.search(text)
    if unset and unset.group(1) != value:
        notes.append(f"{_literal(unset.group(1))} if unset")
    quoted = _FORMAT_QUOTED.search(text)
    token = next(filter(None, (pattern.search(text) for pattern in _FORMAT_TOKENS)), None)
    if quoted and not token:
        notes.append(_literal(quoted.group(1)))
    elif token and token.group(1) not in kind:
        notes.append(token.group(1))
    if kind in ("int", "float", "int|float", "float|int"):
        unit = _UNIT.search(text)
        if unit:
            notes.append(unit.group(1).lower() if unit.group(1) not in ("MB", "SAN") else unit.group(1))
        bound = _range(spec, text)
        if bound:
            notes.append(bound)
    elif not quoted and not token and not unset and "|" not in kind:
        example = _EXAMPLE.search(text)
        if example and _FORMAT_CHARS.search(example.group(1)):
            notes.append("e.g. " + _literal(example.group(1)))
    default: str | None = None
    if value is not None and value != "" and not isinstance(value, (list, dict)):
        default = _literal(value)
    elif "default" not in spec:
        said = _DEFAULT.search(text)
        if said:
            default = _literal(said.group(1)) if said.group(1) is not None else said.group(2).lower()
    return list(dict.fromkeys(notes))[:_MAX_HINTS], default


def _param(name: str, spec: Any, root: Mapping[str, Any], depth: int, optional: bool) -> str:
    kind = type_expr(spec, root, depth)
    notes, default = hints(resolve_ref(spec, root) if isinstance(spec, Mapping) else spec, kind)
    text = f"{name}{'?' if optional else ''}: {kind}"
    if notes:
        text += f" ({', '.join(notes)})"
    if default is not None and optional:
        text += f" = {default}"
    return text


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
    if depth > 0:
        parts = [f"{name}: {type_expr(properties[name], root, depth)}" for name in ordered]
        if optional:
            parts.append("...")
    else:
        parts = [_param(name, properties[name], root, depth, False) for name in ordered]
        parts += [_param(name, properties[name], root, depth, True) for name in optional]
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
