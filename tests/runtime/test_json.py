"""The hot path's JSON (`_json`) reads and writes what the standard library does, at orjson's edges too."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nexus_gateway.runtime import _json

scalars = (
    st.none()
    | st.booleans()
    | st.integers()  # past 64 bits too
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats()  # NaN and infinities too
    | st.text()  # lone surrogates too
)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4), max_leaves=20
)


def _same(a: Any, b: Any) -> bool:
    return repr(a) == repr(b)  # NaN equals itself, 1 and 1.0 and True differ


@given(values)
def test_reads_what_the_standard_library_reads(value: Any) -> None:
    data = json.dumps(value).encode()  # ASCII: a lone surrogate is an escape, NaN a bare word
    assert _same(_json.loads(data), json.loads(data.decode()))
    assert _same(_json.loads(bytearray(data)), json.loads(data.decode()))


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_finite(item) for item in value)
    if isinstance(value, dict):
        return all(_finite(item) for item in value.values())
    return True


def _has_float(value: Any) -> bool:
    if isinstance(value, list):
        return any(_has_float(item) for item in value)
    if isinstance(value, dict):
        return any(_has_float(item) for item in value.values())
    return isinstance(value, float)


@given(values)
def test_writes_what_reads_back_the_same(value: Any) -> None:
    if not _finite(value):
        return  # see test_nan_and_infinities_are_written_as_null
    written = _json.dumps(value)
    assert _same(json.loads(written.decode("utf-8", "surrogatepass")), value)
    assert _json.line(value) == written + b"\n"
    if not _has_float(value):
        # Byte for byte what the gateway wrote with the standard library.
        expected = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")
        assert written == expected


def test_integers_past_64_bits_keep_their_value() -> None:
    assert _json.loads(b'{"id":18446744073709551616}') == {"id": 2**64}
    assert _json.loads(b"[-9223372036854775809]") == [-(2**63) - 1]
    assert _json.dumps({"id": 2**70}) == b'{"id":1180591620717411303424}'


def test_what_only_the_standard_library_accepts_is_read_as_it_reads_it() -> None:
    value = _json.loads(b'{"x":NaN,"y":-Infinity,"s":"\\ud800"}')
    assert math.isnan(value["x"]) and value["y"] == -math.inf and value["s"] == "\ud800"


def test_nan_and_infinities_are_written_as_null() -> None:
    """As the SDK (pydantic) writes them on the slow path: `NaN` is not JSON."""
    assert _json.dumps([math.nan, math.inf]) == b"[null,null]"


def test_keys_that_are_not_strings_are_written_as_the_standard_library_writes_them() -> None:
    assert _json.dumps({1: True, None: 2.5}) == b'{"1":true,"null":2.5}'


@pytest.mark.parametrize("data", [b"\xff{}", b"{", b'{"a":1,}', b"", b"\xef\xbb\xbf{}"])
def test_bad_lines_raise_value_error(data: bytes) -> None:
    with pytest.raises(ValueError):
        _json.loads(data)


def test_objects_json_cannot_write_raise_type_error() -> None:
    with pytest.raises(TypeError):
        _json.dumps({"x": object()})


@pytest.mark.parametrize("depth", [_json.MAX_DEPTH + 1, 1_000, 1_030, 10_000])
@pytest.mark.parametrize("leaf", ["1", "NaN", "123456789012345678901234567890"], ids=["orjson", "nan", "bigint"])
def test_json_nested_past_the_limit_is_refused_as_a_value_error(depth: int, leaf: str):
    """orjson's own limit is 1024 and `json` raises RecursionError near 1000: neither reaches a caller."""
    line = ("[" * depth + leaf + "]" * depth).encode()
    with pytest.raises(_json.TooDeep):
        _json.loads(line)


def test_json_nested_up_to_the_limit_is_read_as_json_reads_it():
    line = ("[" * (_json.MAX_DEPTH - 1) + '{"a":1}' + "]" * (_json.MAX_DEPTH - 1)).encode()
    assert _json.loads(line) == json.loads(line)
    wide = json.dumps([[{"a": [i]}] for i in range(500)]).encode()  # many brackets, shallow
    assert _json.loads(wide) == json.loads(wide)
