"""The grammar arguments are decoded under: built from the tool's JSON Schema, looser when it cannot be.

llama.cpp's converter handles most schemas (enums, formats, nested objects, local `$ref`, `anyOf`). Some
real tools' schemas it cannot express (regex syntax it lacks, `prefixItems`, `not`, nodes with no type),
or only as a grammar too large to be worth it (long `maxLength` bounds, huge enums). Those fall back in
three steps, each tried when the one before fails:

    schema    the schema as it is (time-zone parameters as enums, domains.py; patterns in the dialect the
              converter writes right, `converter_pattern`, or left to validation)
    loose     the schema without what the converter lacks (`loosened`): patterns, `prefixItems`, `not`
              and annotations dropped, long length bounds left to the grammar's own string bound
    skeleton  an object of the schema's own property names, each of its declared type where the type
              is plain (enums kept when short), any JSON value where not; required ones required
    generic   any flat JSON object (only when the schema has no properties to name)

The plan says which, and why. Whatever the grammar, the result is validated with jsonschema before any
call (the generator repairs and retries what fails), so the grammar is a help, never the last word.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from nexus_gateway.engine import schema_grammar
from nexus_gateway.generation.domains import with_domains

MAX_GRAMMAR_CHARS = 64_000
"""Past this a grammar costs more per token than it helps (it is re-matched over candidate tokens)."""
MAX_STRING_CHARS = 96
"""Free strings are bounded, so a model that starts repeating itself still closes the object."""
_CHAR = r"""char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])"""
"""A JSON string character: the converter's own rule lets raw control characters (newlines) through."""

GENERIC_OBJECT = (
    _CHAR
    + "\n"
    + r"""root ::= "{" space ( member ("," space member){0,5} )? "}" space
member ::= key ":" space value
key ::= "\"" char{1,40} "\"" space
value ::= scalar | "[" space ( scalar ("," space scalar){0,7} )? "]" space
scalar ::= string | number | ("true" | "false" | "null") space
string ::= "\"" char{0,48} "\"" space
number ::= "-"? ([0-9] | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,4})? space
space ::= " "?
"""
)
"""Any flat JSON object: at most 6 members, scalar or short-array values, short strings; so it always
closes within the token budget (the schema still judges the result)."""


@dataclass(frozen=True)
class GrammarPlan:
    gbnf: str
    kind: Literal["schema", "loose", "skeleton", "generic"]
    reason: str
    """Why the schema's own grammar was not used; empty for a schema grammar."""
    opens_key: bool
    """The object must have a first key, so the prompt may end with `{"` (else it ends with `{`)."""
    empty: bool = False
    """The tool takes no parameters: its arguments are `{}` without asking the model."""


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties")
    return properties if isinstance(properties, dict) else {}


def grammar_for(schema: dict[str, Any]) -> GrammarPlan:
    """The grammar plan for a tool's input schema (never raises)."""
    properties = _properties(schema)
    required = [name for name in schema.get("required") or [] if name in properties]
    open_ended = schema.get("additionalProperties") not in (None, False) or "patternProperties" in schema
    if not properties and not open_ended and not any(k in schema for k in ("anyOf", "oneOf", "allOf", "$ref")):
        return GrammarPlan("", "schema", "", opens_key=False, empty=True)
    opens_key = bool(required)
    if schema.get("type", "object") != "object":
        return _fallback(schema, "the schema is not an object schema", opens_key)
    closed = dict(converter_patterns(with_domains(schema)))  # known value domains (time zones) as enums
    if "additionalProperties" not in closed and properties:
        closed["additionalProperties"] = False  # only the parameters the tool declares
    gbnf, reason = _converted(closed, list(properties))
    if gbnf is not None:
        return GrammarPlan(gbnf, "schema", "", opens_key=opens_key)
    return _fallback(closed, reason, opens_key)


def _converted(schema: dict[str, Any], order: list[str]) -> tuple[str | None, str]:
    """The converter's grammar for `schema` (strings made strict and bounded), or None and why not."""
    try:
        gbnf = schema_grammar(json.dumps(schema), order)
    except Exception as exc:  # boundary: the converter raises anything on schemas it does not support
        return None, f"the converter cannot express this schema ({type(exc).__name__}: {str(exc)[:80]})"
    if len(gbnf) > MAX_GRAMMAR_CHARS:
        return None, f"the schema grammar is {len(gbnf)} characters (over {MAX_GRAMMAR_CHARS})"
    return _json_strings(gbnf), ""


def looser(schema: dict[str, Any], plan: GrammarPlan) -> list[GrammarPlan]:
    """The grammars to try, in order, when llama.cpp will not parse `plan`'s (`GrammarRejected`): the loose one,
    the skeleton, the generic object, each only if it differs from what was rejected. The answer is still
    judged against the tool's own schema (validation, repair, a retry)."""
    reason = f"llama.cpp rejected the {plan.kind} grammar"
    plans: list[GrammarPlan] = []
    properties = _properties(schema)
    if schema.get("type", "object") == "object":
        gbnf, _ = _converted(loosened(schema), list(properties))
        if gbnf is not None:
            plans.append(GrammarPlan(gbnf, "loose", reason, opens_key=plan.opens_key))
    if properties:
        gbnf, _ = _converted(skeleton(schema), list(properties))
        if gbnf is not None:
            plans.append(GrammarPlan(gbnf, "skeleton", reason, opens_key=plan.opens_key))
    plans.append(GrammarPlan(GENERIC_OBJECT, "generic", reason, opens_key=plan.opens_key))
    return [candidate for candidate in plans if candidate.gbnf != plan.gbnf]


def _fallback(schema: dict[str, Any], reason: str, opens_key: bool) -> GrammarPlan:
    """The loose grammar, else the skeleton, else the generic one; `reason` says why the schema's failed."""
    properties = _properties(schema)
    if schema.get("type", "object") == "object":
        gbnf, _ = _converted(loosened(schema), list(properties))
        if gbnf is not None:
            return GrammarPlan(gbnf, "loose", reason, opens_key=opens_key)
    if properties:
        gbnf, _ = _converted(skeleton(schema), list(properties))
        if gbnf is not None:
            return GrammarPlan(gbnf, "skeleton", reason, opens_key=opens_key)
    return GrammarPlan(GENERIC_OBJECT, "generic", reason, opens_key=opens_key)


_ANNOTATIONS = frozenset(
    ("title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly", "$schema")
)
_UNSUPPORTED = frozenset(
    ("pattern", "patternProperties", "prefixItems", "not", "if", "then", "else", "propertyNames", "contains")
)
_CONVERTER_FORMATS = frozenset(("date", "time", "date-time", "uuid"))
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf")
_SCHEMA_MAPS = ("properties", "$defs", "definitions")


def loosened(node: Any) -> Any:
    """`node` (a JSON Schema) without what llama.cpp's converter cannot express or expands too far: patterns,
    `prefixItems`, `not`, conditionals, annotations, formats it does not know, length bounds past the
    grammar's own string bound; a node left with no keys accepts any value. The language grows (the result
    is validated against the real schema), except where a long bound gives way to the shorter one."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _ANNOTATIONS or key in _UNSUPPORTED:
            continue
        if key == "format" and value not in _CONVERTER_FORMATS:
            continue
        if key == "maxLength" and isinstance(value, int) and value >= MAX_STRING_CHARS:
            continue  # free strings are bounded to MAX_STRING_CHARS anyway (a subset: still valid)
        if key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [loosened(item) for item in value]
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: loosened(item) for name, item in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = loosened(value)
        else:
            out[key] = value
    if "format" in node and "type" not in out and "format" not in out:
        out["type"] = "string"
    if out.get("type") == "array" and not out.get("items"):
        out["items"] = ANY_VALUE  # the converter needs items (an empty schema counts as none)
    return out


ANY_VALUE: dict[str, Any] = {"type": ["string", "number", "boolean", "object", "null"]}
"""Any JSON value but a nested array, as the converter can write it (`{}` reads to it as no schema)."""
_PLAIN = frozenset(("string", "integer", "number", "boolean", "null"))
_SHORT_ENUM = 64


def _plain(spec: Any) -> dict[str, Any]:
    """A node's declared type when it is plain (a scalar, an array of scalars, an object), else any value."""
    if not isinstance(spec, dict):
        return ANY_VALUE
    enum = spec.get("enum")
    if (
        isinstance(enum, list)
        and 0 < len(enum) <= _SHORT_ENUM
        and all(isinstance(v, (str, int, float, bool)) for v in enum)
    ):
        return {"enum": enum}
    kind = spec.get("type")
    if kind is None and isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
        kind = "string"  # too many values to list: any string (the schema still judges it)
    if isinstance(kind, list):
        kinds = [k for k in kind if k in _PLAIN]
        return {"type": kinds} if kinds and len(kinds) == len(kind) else ANY_VALUE
    if kind in _PLAIN:
        return {"type": kind}
    if kind == "array":
        items = _plain(spec.get("items"))
        plain_items = "enum" in items or (isinstance(items.get("type"), str) and items["type"] in _PLAIN)
        return {"type": "array", "items": items if plain_items else ANY_VALUE}
    if kind == "object":
        return {"type": "object"}
    return ANY_VALUE


def skeleton(schema: dict[str, Any]) -> dict[str, Any]:
    """An object schema of `schema`'s own property names, each with its plain type where it has one (any
    value where not), the same required ones, no others: never a list in place of named properties."""
    properties = _properties(schema)
    required = [name for name in schema.get("required") or [] if name in properties]
    return {
        "type": "object",
        "properties": {name: _plain(spec) for name, spec in properties.items()},
        "required": required,
        "additionalProperties": False,
    }


_CLASSES = {"d": "0-9", "w": "a-zA-Z0-9_"}
"""Shorthand classes as ranges (`\\d`, `\\w`); the converter writes them as literal escapes llama.cpp rejects."""
_NEGATED_CLASSES = {"D": "[^0-9]", "W": "[^a-zA-Z0-9_]"}
_PLAIN_PUNCTUATION = frozenset(".-/:@#%&=+*?()|{}$,;!~'<> _")


def converter_pattern(pattern: str) -> str | None:
    """`pattern` (a JSON Schema regex) in the dialect llama.cpp's converter writes correctly, or None when it
    cannot be: shorthand classes as ranges (`\\d` -> `[0-9]`), escaped punctuation as a class of one (`\\.`
    -> `[.]`), non-capturing groups as groups; anchored at both ends (the converter asks for it; an unanchored
    pattern matches inside a longer value, which it cannot write). Lookarounds, flags, back-references and
    `\\s` give None: the pattern is left to validation."""
    if len(pattern) < 2 or not pattern.startswith("^") or not pattern.endswith("$") or pattern.endswith("\\$"):
        return None
    out: list[str] = []
    i, in_class, trailing_dash = 0, False, False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            if i + 1 >= len(pattern):
                return None
            escaped = pattern[i + 1]
            if escaped in _CLASSES:
                out.append(_CLASSES[escaped] if in_class else f"[{_CLASSES[escaped]}]")
            elif escaped in _NEGATED_CLASSES and not in_class:
                out.append(_NEGATED_CLASSES[escaped])
            elif escaped == "-" and in_class:
                trailing_dash = True
            elif escaped in _PLAIN_PUNCTUATION:
                out.append(escaped if in_class else f"[{escaped}]")
            else:
                return None  # \s, \b, back-references, escapes of [ ] ^ \ and the like
            i += 2
            continue
        if in_class:
            if char == "]":
                out.append("-]" if trailing_dash else "]")
                in_class, trailing_dash = False, False
            else:
                out.append(char)
        elif char == "[":
            in_class = True
            out.append(char)
            if pattern.startswith("^", i + 1):
                out.append("^")
                i += 1
        elif char == "(" and pattern.startswith("?", i + 1):
            if not pattern.startswith("?:", i + 1):
                return None  # lookarounds, named groups, flags
            out.append("(")
            i += 3
            continue
        else:
            out.append(char)
        i += 1
    return None if in_class else "".join(out)


def converter_patterns(node: Any) -> Any:
    """A copy of `node` (a JSON Schema) with each `pattern` in `converter_pattern`'s dialect, or left out where
    it has none (for decoding only: the answer is validated against the tool's own schema)."""
    if isinstance(node, list):
        return [converter_patterns(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "pattern" and isinstance(value, str):
            if (written := converter_pattern(value)) is not None:
                out[key] = written
        elif key in ("enum", "const", "default", "examples"):
            out[key] = value
        else:
            out[key] = converter_patterns(value)
    return out


def _json_strings(gbnf: str) -> str:
    """Strict JSON string characters, and free strings bounded to `MAX_STRING_CHARS`."""
    lines = [_CHAR if line.startswith("char ::=") else line for line in gbnf.splitlines()]
    return "\n".join(lines).replace("char*", f"char{{0,{MAX_STRING_CHARS}}}") + "\n"


def parse_object(text: str) -> dict[str, Any] | None:
    """`text` as a complete JSON object, or None while it is not one yet."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
