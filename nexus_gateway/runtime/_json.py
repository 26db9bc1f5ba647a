"""JSON on the hot path: orjson's speed, the standard library's answers.

A proxied call parses two lines and writes two; with the standard library that was about a fifth of
the gateway's time per call (`json` builds its C encoder anew on every `encode`, even for an int). orjson
does the same work in a quarter of the time or less, but it answers differently at a few edges. Where
it would, these functions give what `json` gives:

- integers past 64 bits: orjson reads them as floats (a silent change of value) and refuses to write
  them; a line with a run of 19 digits is read by `json`, and an object orjson refuses is written by it;
- `NaN`, `Infinity`, lone surrogates, keys that are not strings: orjson refuses to read them; `json`
  reads them;
- bytes that are not UTF-8: both refuse (`ValueError`, as `json.loads(data.decode())` raises);
- JSON nested more than `MAX_DEPTH` deep: `loads` refuses it (`TooDeep`, a `ValueError`), as the SDK's own
  parser does (pydantic's, on every path the fast path skips), where `json` would raise `RecursionError` (or,
  below Python's recursion limit, return a value that validation, `repr` and writing it on again may fail on).

`dumps` writes what `json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()` writes, up to
the spelling of floats (both give the shortest form that reads back the same number), except that `NaN` and
the infinities, which are not JSON, are written as `null`, as the SDK writes them (pydantic) on the slow path.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

_DIGITS_AS_NINES = bytes(ord("9") if chr(byte).isdigit() and byte < 128 else ord(" ") for byte in range(256))
_LONG_RUN = b"9" * 19
"""A run of digits that may be an integer past 64 bits (2**63 has 19 digits), found anywhere in the line
(strings too: reading such a line with `json` is slower, never different). Found by translating every digit
to a 9: five times faster than `re.search(rb"\\d{19}")`, which cost more than orjson's whole parse."""

MAX_DEPTH = 200
"""The deepest nesting read: what pydantic's JSON parser (jiter) takes, so a line the fast path refuses for
its depth is one the SDK's path refuses too. Far below Python's recursion limit (1000), so whatever handles a
value read here (jsonschema, `repr`, `json.dumps`) never meets it."""


class TooDeep(ValueError):
    """The JSON nests deeper than `MAX_DEPTH`."""

    def __init__(self) -> None:
        super().__init__(f"the JSON nests more than {MAX_DEPTH} levels deep")


_compact = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def loads(data: bytes | bytearray) -> Any:
    """What `json.loads(data.decode())` returns (and raises: a `ValueError`), and `TooDeep` for JSON nested
    more than `MAX_DEPTH` deep."""
    if _LONG_RUN not in data.translate(_DIGITS_AS_NINES):
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # something only `json` accepts (NaN, a lone surrogate), too deep, or an error for it to word
        else:
            return _checked(value, data)
    try:
        value = json.loads(data.decode())
    except RecursionError:
        raise TooDeep from None
    return _checked(value, data)


def _checked(value: Any, data: bytes | bytearray) -> Any:
    """`value`, read from `data`, unless it nests more than `MAX_DEPTH` deep. Nesting that deep needs that many
    brackets: a line with fewer (every usual one) is not walked."""
    if len(data) <= 2 * MAX_DEPTH or data.count(b"[") + data.count(b"{") <= MAX_DEPTH:
        return value
    if too_deep(value):
        raise TooDeep
    return value


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether `value` nests lists and dicts more than `limit` deep (without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def dumps(value: Any) -> bytes:
    """`value` as compact UTF-8 JSON, as the gateway writes protocol lines (without a newline)."""
    try:
        return orjson.dumps(value)
    except TypeError:  # an integer past 64 bits, a key that is not a string, a subclass orjson does not take
        return _compact(value).encode()


def line(value: Any) -> bytes:
    """`dumps(value)` and a newline: one protocol line."""
    try:
        return orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:
        return _compact(value).encode() + b"\n"
