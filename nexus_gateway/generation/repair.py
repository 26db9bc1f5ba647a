"""Arguments that fail their schema, mended without guessing: what a call may be sent with must validate.

The grammar keeps most answers valid, but not all: a schema the converter cannot express is decoded under
a looser grammar (grammar.py), and formats, patterns and cross-field rules are beyond any grammar. What
fails is mended here in ways that never invent a value:

    coerced          a value in the other spelling of its declared type: `"true"` for a boolean, `"5"` for
                     a number, a lone value where a list is declared, a number where a string is
                     (only when the result validates where the original did not)
    with_defaults    a required parameter left out that the schema gives a default for
    without_invalid  optional parameters whose values fail, and parameters the schema does not declare
                     (when it allows no others), left out so the tool's defaults apply

The generator also re-decodes once with the validation error before it gives up (generator.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jsonschema
from jsonschema import validators
from jsonschema.exceptions import SchemaError

from nexus_gateway.catalog.signatures import resolve_ref

_TRUE = frozenset(("true", "yes", "on", "1"))
_FALSE = frozenset(("false", "no", "off", "0"))


def _validator(schema: Mapping[str, Any]) -> jsonschema.protocols.Validator | None:
    cls = validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError:
        return None
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _mapping(spec: Any, key: str) -> Mapping[str, Any]:
    value = spec.get(key) if isinstance(spec, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _types(spec: Mapping[str, Any], root: Mapping[str, Any]) -> list[str]:
    """The JSON types a parameter's schema declares (through `$ref`, `anyOf`/`oneOf` and type lists)."""
    spec = resolve_ref(spec, root)
    kind = spec.get("type")
    found = (
        [kind] if isinstance(kind, str) else [k for k in kind if isinstance(k, str)] if isinstance(kind, list) else []
    )
    for key in ("anyOf", "oneOf"):
        for option in spec.get(key) or []:
            if isinstance(option, Mapping):
                found += _types(option, root)
    if not found and isinstance(spec.get("enum"), list) and all(isinstance(v, str) for v in spec["enum"]):
        found = ["string"]
    return list(dict.fromkeys(found))


def _number(text: str) -> int | float | None:
    try:
        value = float(text.strip().replace(",", ""))
    except ValueError:
        return None
    return int(value) if value.is_integer() else value


def _converted(value: Any, kind: str) -> Any:
    """`value` as `kind` when it is that kind in another spelling, else `value` itself."""
    if kind == "boolean" and isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    if kind in ("integer", "number") and isinstance(value, str) and not isinstance(value, bool):
        number = _number(value)
        if number is not None and (kind == "number" or isinstance(number, int)):
            return number
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    if kind == "string" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if kind == "array" and not isinstance(value, list) and value is not None:
        return [value]
    return value


def _valid(validator: jsonschema.protocols.Validator, spec: Mapping[str, Any], value: Any) -> bool:
    return not any(True for _ in validator.evolve(schema=spec).iter_errors(value))


def coerced(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` with each top-level value that fails its declared type in the spelling of that type
    (`"true"` -> true, `"5"` -> 5, `"x"` -> ["x"], 5 -> "5"), only where the new value validates."""
    validator = _validator(schema)
    properties = _mapping(schema, "properties")
    fixed = dict(arguments)
    if validator is None:
        return fixed
    for name, value in arguments.items():
        spec = properties.get(name)
        if not isinstance(spec, Mapping):
            continue
        spec = {**spec, "$defs": schema.get("$defs", {}), "definitions": schema.get("definitions", {})}
        if _valid(validator, spec, value):
            continue
        for kind in _types(spec, schema):
            candidate = _converted(value, kind)
            if candidate is not value and _valid(validator, spec, candidate):
                fixed[name] = candidate
                break
    return fixed


def with_defaults(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` with each missing required parameter that has a schema default set to that default."""
    properties = _mapping(schema, "properties")
    filled = dict(arguments)
    for name in schema.get("required") or ():
        spec = properties.get(name)
        if name not in filled and isinstance(spec, Mapping) and "default" in spec:
            filled[name] = spec["default"]
    return filled


def failing(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> set[str]:
    """The top-level parameters whose values the schema rejects, and those it does not allow at all."""
    validator = _validator(schema)
    if validator is None:
        return set()
    properties = _mapping(schema, "properties")
    names: set[str] = set()
    for error in validator.iter_errors(dict(arguments)):
        if error.absolute_path:
            names.add(str(error.absolute_path[0]))
        elif error.validator in ("additionalProperties", "unevaluatedProperties"):
            names.update(name for name in arguments if name not in properties)
    return names


def without_invalid(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`arguments` without the optional (or undeclared) parameters that fail the schema, and their names."""
    required = set(schema.get("required") or ())
    bad = sorted(name for name in failing(schema, arguments) if name not in required)
    return {name: value for name, value in arguments.items() if name not in bad}, bad


def retry_note(problems: tuple[str, ...] | list[str], text: str) -> str:
    """What a re-decoding is told of its first answer: the answer and why the schema rejected it."""
    shown = json.dumps(text, ensure_ascii=False)[1:-1][:200]
    return f"\n(An earlier answer {shown} was rejected: {'; '.join(problems[:2])[:240]}. Answer so that it fits.)"
