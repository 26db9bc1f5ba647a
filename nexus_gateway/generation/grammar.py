"""The grammar arguments are decoded under: built from the tool's JSON Schema, generic when it cannot be.

llama.cpp's converter handles most schemas (enums, formats, nested objects, local `$ref`, `anyOf`). Some
real tools' schemas it cannot express, or only as a grammar too large to be worth it (huge enums): those
get a generic JSON-object grammar, and the plan says why. Either way the result is validated with
jsonschema before any call, so the grammar is a help to the model, never the last word.
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
    kind: Literal["schema", "generic"]
    reason: str
    """Why the generic grammar was used; empty for a schema grammar."""
    opens_key: bool
    """The object must have a first key, so the prompt may end with `{"` (else it ends with `{`)."""
    empty: bool = False
    """The tool takes no parameters: its arguments are `{}` without asking the model."""


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties")
    return properties if isinstance(properties, dict) else {}


def grammar_for(schema: dict[str, Any]) -> GrammarPlan:
    """The grammar plan for a tool's input schema."""
    properties = _properties(schema)
    required = [name for name in schema.get("required") or [] if name in properties]
    open_ended = schema.get("additionalProperties") not in (None, False) or "patternProperties" in schema
    if not properties and not open_ended and not any(k in schema for k in ("anyOf", "oneOf", "allOf", "$ref")):
        return GrammarPlan("", "schema", "", opens_key=False, empty=True)
    opens_key = bool(required)
    if schema.get("type", "object") != "object":
        return GrammarPlan(GENERIC_OBJECT, "generic", "the schema is not an object schema", opens_key=False)
    closed = dict(with_domains(schema))  # known value domains (time zones) as enums, for decoding only
    if "additionalProperties" not in closed and properties:
        closed["additionalProperties"] = False  # only the parameters the tool declares
    try:
        gbnf = schema_grammar(json.dumps(closed), list(properties))
    except Exception as exc:  # boundary: the converter raises anything on schemas it does not support
        reason = f"the converter cannot express this schema ({type(exc).__name__}: {str(exc)[:80]})"
        return GrammarPlan(GENERIC_OBJECT, "generic", reason, opens_key=opens_key)
    if len(gbnf) > MAX_GRAMMAR_CHARS:
        reason = f"the schema grammar is {len(gbnf)} characters (over {MAX_GRAMMAR_CHARS})"
        return GrammarPlan(GENERIC_OBJECT, "generic", reason, opens_key=opens_key)
    return GrammarPlan(_json_strings(gbnf), "schema", "", opens_key=opens_key)


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
