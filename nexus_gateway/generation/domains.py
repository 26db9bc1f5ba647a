"""Value domains: parameters whose values come from a closed, well-known set, decoded from that set.

A tool that takes an IANA time zone wants `Asia/Tokyo`, not `Tokyo`; its schema says so only in words
("IANA timezone name (e.g., 'America/New_York')"). A small model reads the words and writes the city.
Here such a string parameter becomes, for decoding only, an enum of the zone names the system knows, so
the grammar admits only real zones and the model picks among them (`Tokyo` -> `Asia/Tokyo`). The tool's
schema is not changed: jsonschema still judges the result against the original.

Only unconstrained strings are touched (no enum, pattern or format of their own), and not those that
ask for an offset or an abbreviation.
"""

from __future__ import annotations

import functools
import re
import zoneinfo
from collections.abc import Mapping
from typing import Any

from nexus_gateway.generation.codes import code_kind, state_forms, words_for

_TIME_ZONE = re.compile(r"\b(iana|time ?zones?|tz)\b", re.IGNORECASE)
_NOT_A_NAME = re.compile(r"\b(offset|abbreviation|utc[+-])", re.IGNORECASE)
"""Time-zone parameters that want `+09:00` or `JST`, not a zone name."""
_AREAS = ("Africa/", "America/", "Antarctica/", "Asia/", "Atlantic/", "Australia/", "Europe/", "Indian/", "Pacific/")


@functools.cache
def time_zones() -> tuple[str, ...]:
    """Canonical `Area/Location` zone names and `Etc/UTC` (no legacy aliases such as `US/Eastern` or `Japan`)."""
    try:
        names = zoneinfo.available_timezones()
    except Exception:  # boundary: no zone database on this system
        return ()
    return tuple(sorted(name for name in names if name.startswith(_AREAS) or name == "Etc/UTC"))


def _is_time_zone(name: str, spec: Mapping[str, Any]) -> bool:
    if spec.get("type") != "string" or any(key in spec for key in ("enum", "const", "pattern", "format")):
        return False
    words = " ".join(str(spec.get(key) or "") for key in ("title", "description")) + " " + name.replace("_", " ")
    return bool(_TIME_ZONE.search(words)) and not _NOT_A_NAME.search(words)


def spoken_forms(name: str, spec: Mapping[str, Any], value: str) -> tuple[str, ...] | None:
    """How a request names a domain value (`Asia/Tokyo`: "Tokyo"; `America/New_York`: "New York",
    "New_York"; `Etc/UTC`: "UTC"; a currency code `EUR`: "euros"; a language code `de`: "German"; a place
    `Austin, TX` of a `'City, ST'` parameter: "Austin, Texas"), or None
    when the parameter has no known domain or the value is not in it."""
    kind = code_kind(name, spec)
    if kind is not None:
        return words_for(kind, value) or None
    if "," in value:
        return state_forms(spec, value)
    if not _is_time_zone(name, spec) or value not in time_zones():
        return None
    place = value.rsplit("/", 1)[-1]
    return (value, place, place.replace("_", " "))


def with_domains(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with each time-zone string parameter as an enum of zone names (a copy; the input is kept)."""
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not time_zones():
        return schema
    changed = {
        name: {**spec, "enum": list(time_zones())}
        for name, spec in properties.items()
        if isinstance(spec, Mapping) and _is_time_zone(name, spec)
    }
    return {**schema, "properties": {**properties, **changed}} if changed else schema
