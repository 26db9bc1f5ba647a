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

from nexus_gateway.generation.codes import code_kind, state_forms, wants_state_code, words_for

_TIME_ZONE = re.compile(r"\b(iana|time ?zones?|tz)\b", re.IGNORECASE)
_NOT_A_NAME = re.compile(r"\b(offset|abbreviation|utc[+-])", re.IGNORECASE)
"""Time-zone parameters that want `+09:00` or `JST`, not a zone name."""
CITY_ZONES: dict[str, str] = {
    **dict.fromkeys(("Boston", "Washington", "Miami", "Atlanta", "Philadelphia", "Pittsburgh"), "America/New_York"),
    **dict.fromkeys(("Dallas", "Houston", "Austin", "San Antonio", "Minneapolis", "New Orleans"), "America/Chicago"),
    **dict.fromkeys(
        ("San Francisco", "Seattle", "Portland", "Las Vegas", "San Diego", "San Jose"), "America/Los_Angeles"
    ),
    **dict.fromkeys(("Salt Lake City", "Albuquerque"), "America/Denver"),
    **dict.fromkeys(("Montreal", "Ottawa"), "America/Toronto"),
    **dict.fromkeys(("Rio de Janeiro", "Brasilia"), "America/Sao_Paulo"),
    **dict.fromkeys(("Munich", "Frankfurt", "Hamburg", "Cologne"), "Europe/Berlin"),
    **dict.fromkeys(("Edinburgh", "Manchester", "Glasgow"), "Europe/London"),
    **dict.fromkeys(("Milan", "Naples", "Florence", "Venice"), "Europe/Rome"),
    **dict.fromkeys(("Barcelona", "Seville", "Valencia"), "Europe/Madrid"),
    **dict.fromkeys(("Geneva", "Bern", "Basel"), "Europe/Zurich"),
    **dict.fromkeys(("Lyon", "Marseille", "Nice", "Toulouse"), "Europe/Paris"),
    **dict.fromkeys(("Mumbai", "Delhi", "New Delhi", "Bangalore", "Bengaluru", "Chennai", "Hyderabad"), "Asia/Kolkata"),
    **dict.fromkeys(("Beijing", "Shenzhen", "Guangzhou"), "Asia/Shanghai"),
    **dict.fromkeys(("Osaka", "Kyoto"), "Asia/Tokyo"),
    **dict.fromkeys(("Canberra",), "Australia/Sydney"),
    **dict.fromkeys(("Wellington",), "Pacific/Auckland"),
    **dict.fromkeys(("Abu Dhabi",), "Asia/Dubai"),
    **dict.fromkeys(("Tel Aviv",), "Asia/Jerusalem"),
    **dict.fromkeys(("Cape Town",), "Africa/Johannesburg"),
    **dict.fromkeys(("St Petersburg", "Saint Petersburg"), "Europe/Moscow"),
    **dict.fromkeys(("Ho Chi Minh City", "Saigon", "Hanoi"), "Asia/Ho_Chi_Minh"),
    **dict.fromkeys(("UTC", "GMT"), "Etc/UTC"),
}
"""Large cities whose zone is named for another one (`Boston`: `America/New_York`)."""
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


def has_domain(name: str, spec: Mapping[str, Any]) -> bool:
    """Whether a request may name the parameter's values in other words than the value's (a zone by its place,
    a code by what it stands for, `City, ST` with the state's name): `spoken_forms` knows them."""
    return code_kind(name, spec) is not None or _is_time_zone(name, spec) or wants_state_code(spec)


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
    return (value, place, place.replace("_", " "), *_aliases().get(value, ()))


@functools.cache
def _aliases() -> dict[str, tuple[str, ...]]:
    aliases: dict[str, list[str]] = {}
    for city, zone in CITY_ZONES.items():
        aliases.setdefault(zone, []).append(city)
    return {zone: tuple(cities) for zone, cities in aliases.items()}


@functools.cache
def _places() -> tuple[re.Pattern[str], dict[str, str]]:
    """One pattern finding any zone's place (`Berlin`, `New York`, `Boston`) as whole words, and each place's zone
    by its lower-case spelling."""
    zones = {zone.rsplit("/", 1)[-1].replace("_", " ").lower(): zone for zone in time_zones() if zone != "Etc/UTC"}
    zones |= {city.lower(): zone for city, zone in CITY_ZONES.items()}
    words = sorted(zones, key=len, reverse=True)
    return re.compile(r"\b(" + "|".join(re.escape(word) for word in words) + r")\b", re.IGNORECASE), zones


def named_zones(request: str) -> list[str]:
    """The zones of the places `request` names, in its order (a request in mixed case names a place only with a
    capital: "Wake me at 7" names no Pacific/Wake, "what time is it in paris" does name Paris)."""
    pattern, zones = _places()
    cased = request != request.lower()
    found = []
    for match in pattern.finditer(request):
        if cased and not match.group(0)[0].isupper():
            continue
        zone = zones[match.group(0).lower()]
        if zone not in found:
            found.append(zone)
    return found


def zones_as_stated(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` with each time-zone value whose place the request never names replaced by the one zone whose
    place it does name that no other time-zone argument holds ("9:15 Berlin time to Sydney time": a source of
    `America/New_York` beside a target of `Australia/Sydney` becomes `Europe/Berlin`); kept where that is not
    one zone."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return dict(arguments)
    zoned = [
        name
        for name, value in arguments.items()
        if isinstance(value, str) and _is_time_zone(name, properties.get(name) or {})
    ]
    if not zoned:
        return dict(arguments)
    named = named_zones(request)
    fixed = dict(arguments)
    for name in zoned:
        if fixed[name] in named or _said(request, spoken_forms(name, properties[name], fixed[name])):
            continue
        held = {fixed[other] for other in zoned if other != name}
        free = [zone for zone in named if zone not in held]
        if len(free) == 1:
            fixed[name] = free[0]
    return fixed


def _said(request: str, forms: tuple[str, ...] | None) -> bool:
    return any(re.search(rf"\b{re.escape(form)}\b", request, re.IGNORECASE) for form in forms or ())


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
