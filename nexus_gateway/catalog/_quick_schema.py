"""A quick yes for arguments to a plain schema, before jsonschema is asked.

Most tools take an object of named scalars: `{"type": "object", "properties": {"city": {"type":
"string"}}, "required": ["city"]}`, perhaps with `anyOf` a type or null (pydantic's optional
parameters), a string `enum` or `additionalProperties: false`. For such a schema `quick_check` builds
a plain function that says whether arguments are certainly valid, at about a tenth of what jsonschema's
validator takes for the same arguments (the hot request validates the arguments of every call).

The check only ever says "valid" when every draft jsonschema knows (4 to 2020-12) would say so too:
it accepts `int` (never `bool`) as an integer, `int` and `float` as numbers, and nothing is coerced.
When it answers False the full validator runs and words the problems (a float like `2.0` is an integer
to jsonschema: the quick check leaves that to it). A schema with any keyword outside this subset
(`minimum`, `pattern`, `format`, `$ref`, nested objects' properties, ...) gets no quick check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Check = Callable[[dict[str, Any]], bool]

_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"})
_OBJECT_KEYS = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties", "$schema"}
_PROPERTY_KEYS = _ANNOTATIONS | {"type", "anyOf", "enum"}
_DRAFTS = frozenset(
    {
        "http://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-06/schema#",
        "http://json-schema.org/draft-07/schema#",
        "https://json-schema.org/draft/2019-09/schema",
        "https://json-schema.org/draft/2020-12/schema",
    }
)


def _is_integer(value: Any) -> bool:
    return type(value) is int


def _is_number(value: Any) -> bool:
    return type(value) is int or type(value) is float


_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda value: type(value) is str,
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda value: type(value) is bool,
    "null": lambda value: value is None,
    "array": lambda value: type(value) is list,
    "object": lambda value: type(value) is dict,
}


def _type_check(schema: Any) -> Callable[[Any], bool] | None:
    """The check of a schema that says only `type` (a name or a list of names) and annotations, else None."""
    if not isinstance(schema, dict) or not set(schema) <= _ANNOTATIONS | {"type"}:
        return None
    kind = schema.get("type")
    if isinstance(kind, str):
        return _TYPES.get(kind)
    if not isinstance(kind, list) or not kind or not all(isinstance(name, str) and name in _TYPES for name in kind):
        return None
    found = [_TYPES[name] for name in kind]
    return lambda value: any(check(value) for check in found)


def _property_check(schema: Any) -> Callable[[Any], bool] | None:
    if not isinstance(schema, dict) or not set(schema) <= _PROPERTY_KEYS:
        return None
    if "anyOf" in schema:
        branches = schema["anyOf"]
        if "type" in schema or "enum" in schema or not isinstance(branches, list) or not branches:
            return None
        checks = [_type_check(branch) for branch in branches]
        if any(check is None for check in checks):
            return None
        found = [check for check in checks if check is not None]
        return lambda value: any(check(value) for check in found)
    if "enum" in schema:
        allowed = schema["enum"]
        if not isinstance(allowed, list) or not allowed or not all(isinstance(item, str) for item in allowed):
            return None
        if "type" in schema and schema["type"] != "string":
            return None
        names = frozenset(allowed)
        return lambda value: type(value) is str and value in names
    return _type_check(schema)


def quick_check(schema: dict[str, Any]) -> Check | None:
    """A function telling whether arguments certainly satisfy `schema`, or None when the schema is not plain."""
    if not set(schema) <= _OBJECT_KEYS or schema.get("type") != "object":
        return None
    if "$schema" in schema and schema["$schema"] not in _DRAFTS:
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, dict) or not isinstance(required, list) or not isinstance(extra, bool):
        return None
    if not all(isinstance(name, str) for name in required):
        return None
    checks: dict[str, Callable[[Any], bool]] = {}
    for name, subschema in properties.items():
        check = _property_check(subschema)
        if check is None:
            return None
        checks[name] = check
    needed = tuple(required)
    closed = not extra

    def certainly_valid(arguments: dict[str, Any]) -> bool:
        for name in needed:
            if name not in arguments:
                return False
        for name, value in arguments.items():
            check = checks.get(name)
            if check is None:
                if closed:
                    return False
            elif not check(value):
                return False
        return True

    return certainly_valid
