"""Whether a request can fill a tool's required arguments: the re-ranker for ambiguous routing.

When two tools are close in retrieval, the one the request can fill is the one asked for. "What time is
it in Tokyo?" fits both `get_current_time(timezone)` and `convert_time(source_timezone, time,
target_timezone)` by its words, but only the first can be filled from it: a `time` would have to be
invented. So the close candidates' arguments are generated, and every free value of a *required*
argument (a string or number the model wrote; not an enum choice or a boolean) is checked against the
request: it is supported only when it occurs there as written, as a whole span (case aside): not glued to
letters, digits, `/`, `\\`, `-`, `~` or a file extension on either side. `/work/a.txt` is in "read
/work/a.txt", `work/a.txt`, `work/work.tmp` and `a` are not; a number must appear as written. A value the
grammar took from a known domain counts when the request names it in the domain's own words
(`Asia/Tokyo` for "Tokyo", domains.py).

A free string value that the request holds in another spelling is first written as the request writes it
(`as_written`): the case of the request (`construction site`, not `Construction Site`), and the plural the
request uses when the model wrote its singular (`cats` in "influenza in cats", not `cat`).

Optional arguments are not counted: a small model fills them with plausible inventions for the right
tool as often as for the wrong one (measured on Seal-Tools; README). Those inventions are dropped from the
call instead (`invented_optional`): an optional value the request never gave should be the tool's default.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nexus_gateway.generation.domains import spoken_forms

_GLUED_BEFORE = r"(?<![\w/\\~.-])"
_GLUED_AFTER = r"(?![\w/\\~-]|\.\w)"
"""A span is whole when no path or identifier character touches it (a sentence's final `.` may)."""


@dataclass(frozen=True)
class Grounding:
    supported: int
    """Free values of the required arguments that the request contains."""
    free: int
    """Free values of the required arguments (enum choices, booleans and empty values are not counted)."""

    @property
    def invented(self) -> int:
        return self.free - self.supported


def occurs(span: str, request: str) -> bool:
    """`span` is in `request` as written (case aside), as a whole span."""
    return _found(span, request) is not None


def _found(span: str, request: str) -> str | None:
    """The request's own spelling of `span` where it occurs as a whole span (case aside), else None."""
    span = span.strip()
    match = re.search(_GLUED_BEFORE + re.escape(span) + _GLUED_AFTER, request, re.IGNORECASE) if span else None
    return match.group(0) if match else None


_PLURALS = ("s", "es")
_FIXED = ("enum", "const", "format", "pattern")


def as_written(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` with each free top-level string written as the request writes it: the request's case, or
    the request's plural of a singular the model wrote. Other values, and strings the request does not
    hold in either way, are left as they are."""
    properties = _mapping(schema, "properties")
    written = dict(arguments)
    for name, value in arguments.items():
        spec = _mapping(properties, name)
        if not isinstance(value, str) or any(k in spec for k in _FIXED) or spoken_forms(name, spec, value):
            continue
        found = _found(value, request)
        if found is None and value.strip() and value.strip()[-1].isalpha():
            found = next(filter(None, (_found(value.strip() + ending, request) for ending in _PLURALS)), None)
        if found is not None and found != value:
            written[name] = found
    return written


def _mapping(spec: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = spec.get(key)
    return value if isinstance(value, Mapping) else {}


def _values(value: Any, spec: Mapping[str, Any]) -> list[Any]:
    """The free scalar values inside one argument (lists and nested objects are walked)."""
    if "enum" in spec or "const" in spec or isinstance(value, bool) or value is None or value == "":
        return []
    if isinstance(value, list):
        return [v for item in value for v in _values(item, _mapping(spec, "items"))]
    if isinstance(value, dict):
        properties = _mapping(spec, "properties")
        return [v for key, item in value.items() for v in _values(item, _mapping(properties, key))]
    return [value]


def _said(item: Any, request: str, name: str, spec: Mapping[str, Any]) -> bool:
    if isinstance(item, (int, float)):
        written = {repr(item), str(int(item))} if isinstance(item, float) and item.is_integer() else {repr(item)}
        return any(re.search(rf"(?<![\d.]){re.escape(form)}(?!\.?\d)", request) for form in written)
    forms = spoken_forms(name, spec, str(item))
    return any(occurs(form, request) for form in forms) if forms is not None else occurs(str(item), request)


def _per_argument(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Grounding]:
    properties = _mapping(schema, "properties")
    result = {}
    for name, value in arguments.items():
        spec = _mapping(properties, name)
        items = _values(value, spec)
        result[name] = Grounding(sum(_said(item, request, name, spec) for item in items), len(items))
    return result


def grounding(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> Grounding:
    """How many of the free values of the required arguments in `arguments` the request supports."""
    required = set(schema.get("required") or ())
    counted = [g for name, g in _per_argument(request, schema, arguments).items() if name in required]
    return Grounding(sum(g.supported for g in counted), sum(g.free for g in counted))


def invented_optional(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[str]:
    """The optional arguments with a value the request does not contain: the model's inventions, dropped
    before the call so the tool's own defaults apply (on 100 Seal-Tools cases the 270M model invented 57
    of them; dropping them changed no case's correctness). An empty string is no value either: the model's
    way of skipping a parameter (`"username": ""`), dropped the same."""
    required = set(schema.get("required") or ())
    per = _per_argument(request, schema, arguments)
    return [name for name, g in per.items() if name not in required and (g.invented or arguments[name] == "")]


def ungrounded(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[str]:
    """The arguments (required or not) holding a free value the request does not contain as written."""
    return [name for name, g in _per_argument(request, schema, arguments).items() if g.invented]
