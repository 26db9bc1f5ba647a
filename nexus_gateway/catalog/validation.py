"""Arguments against a tool's JSON Schema, with messages a model can act on."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from jsonschema import validators
from jsonschema.exceptions import SchemaError

from nexus_gateway.catalog._quick_schema import Check, quick_check
from nexus_gateway.errors import ArgumentsInvalid

_MAX_PROBLEMS = 5
_CACHE_LIMIT = 4096
_cache: dict[str, jsonschema.protocols.Validator | None] = {}
_quick: dict[str, Check | None] = {}


def _build_validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator | None:
    cls = validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError:
        return None  # an upstream's broken schema must not block its calls: the upstream will judge
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _validator_for(schema: dict[str, Any], key: str | None) -> jsonschema.protocols.Validator | None:
    key = key or json.dumps(schema, sort_keys=True)
    if key not in _cache:
        if len(_cache) >= _CACHE_LIMIT:
            _cache.clear()
        _cache[key] = _build_validator(schema)
    return _cache[key]


def _quick_for(schema: dict[str, Any], key: str) -> Check | None:
    if key not in _quick:
        if len(_quick) >= _CACHE_LIMIT:
            _quick.clear()
        _quick[key] = quick_check(schema)
    return _quick[key]


def schema_problems(schema: dict[str, Any], arguments: dict[str, Any], *, key: str | None = None) -> list[str]:
    """Readable violations of `schema` by `arguments` (empty when valid); `key` caches the compiled schema.
    A plain schema's arguments get a quick check first (`_quick_schema.py`); jsonschema runs when it fails."""
    if key is not None and (check := _quick_for(schema, key)) is not None and check(arguments):
        return []
    validator = _validator_for(schema, key)
    if validator is None:
        return []
    try:
        errors = sorted(validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.absolute_path])
    except RecursionError:  # a recursive schema followed down arguments nested deeper than Python recurses
        return ["(arguments): nested too deeply to check against the tool's schema; send them less nested."]
    problems = []
    for error in errors[:_MAX_PROBLEMS]:
        path = "/".join(str(part) for part in error.absolute_path)
        problems.append(f"{path or '(arguments)'}: {error.message}")
    return problems


def validate_arguments(tool: str, schema: dict[str, Any], arguments: dict[str, Any], *, key: str | None = None) -> None:
    """Raise `ArgumentsInvalid` listing what is wrong with `arguments`."""
    problems = schema_problems(schema, arguments, key=key)
    if problems:
        raise ArgumentsInvalid(tool, problems)
