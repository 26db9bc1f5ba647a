"""Values written in the form their parameter's description asks for, from what the request says.

A small model copies the request's words; the tool's description often asks for another spelling of the
same value. Each rewrite here starts from a value the request gives and only changes its form, as the
parameter's own schema or description states it:

    codes          a currency or language named in words, where the description asks for its code
                   (`euros` -> `EUR` for "ISO 4217 code", `German` -> `de` for "ISO 639-1 code"; codes.py)
    comma forms    a place cut before the comma the description's form has (`'City, ST'`): the request's
                   next piece is joined back (`Portland` -> `Portland, OR` for "... in Portland, OR on ..."),
                   and a US state's name becomes its code where the form asks for one (`Austin, Texas` ->
                   `Austin, TX`)
    clock times    `6:45` -> `06:45`, `7pm` -> `19:00` where the description asks for `HH:MM`; a time the
                   request does not say, where it says one time, becomes that one (`15:30` -> `19:30` for
                   "at 7:30 pm", `06:45` -> `18:45` for "6:45 in the evening")
    dates          a date with a time of day appended cut to the date where the description asks for
                   `YYYY-MM-DD` alone (`2026-04-20 10:00` -> `2026-04-20`)
    no spaces      `UA 857` -> `UA857` where the description says "without spaces"
    no marks       `:white_check_mark:` -> `white_check_mark` where it says "(without ::)", `#general` ->
                   `general` for "without the #", `/src/app.py` -> `src/app.py` for "without the leading slash"
    column numbers a spreadsheet column the request names by its letter ("before column D") as its number (4)
                   where the description counts columns from 1 ("column number (A=1)", "1-based column")
    shaped digits  a value the request does not hold, where the description quotes an example of digits and
                   separators, the model copied that example, and the request has one run of as many
                   digits: written as the example is (`1764950400.123456` from a Slack link's
                   `p1764950400123456` for "in the format '1234567890.123456'")
    seasons        a season or fiscal year the request spans over two years, where the description asks for
                   `YYYY-YY` (or a season's pattern `^[0-9]{4}-[0-9]{2}$`): `2023 to 2024`, `2023/2024` ->
                   `2023-24`
    percentages    `4` -> `0.04` where the description asks for a decimal (or a fraction) and the request
                   writes "4%"; `0.0625` -> `6.25` where it asks for a percentage and the request writes
                   "6.25%"

`as_said` runs first, before grounding drops what the request does not say (dates.py, durations.py):

    said dates     a date the request writes out (`21st of November 2026`) in the form the parameter asks for
                   (`2026-11-21`, `11/21/2026`), also in place of a date the model half wrote (`2026-`)
    durations      the request's one duration in the unit the parameter takes, by its name or description
                   (`5 minutes` -> 300 for "in seconds", `3 minutes` -> 180000 for `timeout_ms`), or written
                   compactly where the description's examples are (`1.5 hours` -> `1h 30m` for "Examples:
                   '1h 30m', '1d'"; `90 minutes` -> `1h30m` for "e.g. '5s', '2m', '3h'")

`quantity_echoes` names the optional strings that only repeat a quantity another argument already holds
(`label: "5 minutes"` beside `duration: 300`): left out like any other value the request did not give.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from nexus_gateway.generation.codes import STATE_WORDS, code_for, code_kind, comma_form, wants_state_code
from nexus_gateway.generation.dates import asked_form, bound, bound_of, read_date, said_dates, written
from nexus_gateway.generation.durations import (
    asked_unit,
    asks_compact,
    compact,
    compact_seconds,
    in_unit,
    said_durations,
    said_in_unit,
    said_seconds,
)
from nexus_gateway.generation.grounding import digit_examples, said_uuids, shaped_numbers

_FIXED = ("enum", "const")
_PIECE = re.compile(r"\s*,\s*((?:[A-Z][\w.'-]*)(?:\s+[A-Z][\w.'-]*){0,2})")
"""What follows a comma in a place: one to three capitalized words (`OR`, `Spain`, `New South Wales`)."""
_NOT_PLACE = frozenset("I On At In From To For And Or With By Near Please Then".split())  # noqa: SIM905
_HH_MM = re.compile(r"\bHH:MM\b|\b24-hour\b", re.IGNORECASE)
_CLOCK = re.compile(r"^(\d{1,2})(?::(\d{2}))?\s*(?:([ap])\.?\s*m\.?)?$", re.IGNORECASE)
_SAID_CLOCK = re.compile(
    r"(?<![\d:.$])(\d{1,2})(?::(\d{2}))?\s*"
    r"(?:([ap])\.?\s?m\b\.?|(in the (?:morning|afternoon|evening)|at night|tonight))"
    r"|(?<![\d:.$])(\d{1,2}):(\d{2})(?![\d:])",
    re.IGNORECASE,
)
"""A time of day as a request says it: `7:30 pm`, `1pm`, `6:45 in the evening`, or `14:00` (24-hour)."""
_DATE_ONLY = re.compile(r"\bYYYY-MM-DD\b(?![ T]?(?:HH|hh))")
_DATE_WITH_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2})[ T]\d{1,2}:\d{2}(?::\d{2})?$")
_PERCENT = re.compile(r"\b(?:as|in)\s+(?:a\s+)?percent(?:age)?\b|\bpercentage\b|\d for \d+(?:\.\d+)?\s?%", re.I)
_SEASON_FORM = re.compile(r"\bYYYY-YY\b")
_SEASON_WORDS = re.compile(r"\b(?:season|fiscal|financial year|academic year|school year)", re.IGNORECASE)
_SAID_SEASON = re.compile(
    r"(?<![\d.])((?:19|20)\d{2})\s*(?:-|\u2013|/|\bto\b|\bthrough\b|\band\b)\s*((?:19|20)?\d{2})(?![\d.])",
    re.IGNORECASE,
)
"""Two years a request joins into one season: `2023-24`, `2023/2024`, `2023 to 2024`."""
_NO_SPACES = re.compile(r"\b(?:without|no) (?:spaces|whitespace)\b", re.IGNORECASE)
_WITHOUT_MARKS = re.compile(
    r"\b(?:without|no|excluding|omit(?:ting)?|minus)\s+(?:the\s+|any\s+)?(leading\s+|trailing\s+|surrounding\s+)?"
    r"(?:([\"'`]?)([#@:/$]{1,2})\2(?!\w)|(colons?|hash(?: sign)?|pound sign|at sign|@ symbol|slash(?:es)?))",
    re.IGNORECASE,
)
"""A description saying which marks a value is written without: "The name of the emoji reaction (without ::)",
"channel name without the #", "username without the @", "path without the leading slash"."""
_MARK_WORDS = {"colon": ":", "hash": "#", "pound": "#", "at": "@", "@": "@", "slash": "/"}
_DECIMAL = re.compile(
    r"\b(?:as an? (?:decimal|fraction)|in decimal|decimal form|(?<![\d.])0?\.\d+ for \d+(?:\.\d+)? ?%)", re.I
)
_QUANTITY = re.compile(r"^\$?\s*(\d+(?:\.\d+)?)\s*(%|[A-Za-z]+)?$")


def _mapping(spec: Any, key: str) -> Mapping[str, Any]:
    value = spec.get(key) if isinstance(spec, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _joined_place(value: str, request: str, spec: Mapping[str, Any]) -> str:
    """`value` with the piece after its comma in the request joined back, and a state written as its code
    where the form asks for one."""
    if "," not in value:
        found = re.search(r"(?<![\w-])" + re.escape(value.strip()) + r"(?![\w-])", request, re.IGNORECASE)
        piece = _PIECE.match(request, found.end()) if found else None
        if found and piece:
            words = piece.group(1).split()
            while words and words[-1] in _NOT_PLACE:
                words.pop()
            if words and words[0] not in _NOT_PLACE:
                value = f"{found.group(0)}, {' '.join(words)}"
    if "," in value and wants_state_code(spec):
        place, _, state = value.rpartition(",")
        words = state.split()
        for size in range(len(words), 0, -1):  # "Texas" of "Austin, Texas", not the words after it
            code = STATE_WORDS.get(" ".join(words[:size]).casefold())
            if code:
                return f"{place.strip()}, {code}"
    return value


def _clock(value: str) -> str:
    match = _CLOCK.match(value.strip())
    if match is None or (match.group(2) is None and match.group(3) is None):
        return value
    hour, minute, half = int(match.group(1)), match.group(2) or "00", (match.group(3) or "").lower()
    if half == "p" and hour < 12:
        hour += 12
    elif half == "a" and hour == 12:
        hour = 0
    return f"{hour:02d}:{minute}" if hour < 24 and int(minute) < 60 else value


_SAID_SPAN = re.compile(
    r"(?<![\d:.$])(\d{1,2})(?::(\d{2}))?\s*(?:-|\u2013|to|and|until|till)\s*(\d{1,2})(?::\d{2})?\s*([ap])\.?\s?m\b",
    re.IGNORECASE,
)
"""Two times of day sharing the second one's half of the day: "between 2 and 4 pm", "9-11am", "from 1 to 3:30 pm"."""


def said_clock_times(request: str) -> list[str]:
    """The times of day `request` says, as `HH:MM` on the 24-hour clock, in order, once each. The first time of
    a span said with one "am"/"pm" ("between 2 and 4 pm") is in the same half of the day unless it would come
    after the second ("11 to 1 pm": 11:00)."""
    said: list[tuple[int, str]] = []
    for span in _SAID_SPAN.finditer(request):
        first, minute, second = int(span.group(1)), span.group(2) or "00", int(span.group(3))
        if 1 <= first <= 12 and 1 <= second <= 12 and int(minute) < 60:
            later = span.group(4).lower() == "p" and first % 12 <= second % 12
            said.append((span.start(), f"{first % 12 + (12 if later else 0):02d}:{minute}"))
    for match in _SAID_CLOCK.finditer(request):
        if match.group(1) is not None:
            hour, minute = int(match.group(1)), match.group(2) or "00"
            later = (match.group(3) or "").lower() == "p" or re.search(
                r"afternoon|evening|night", match.group(4) or "", re.IGNORECASE
            )
            if not 1 <= hour <= 12:
                continue
            hour = hour % 12 + (12 if later else 0)
        else:
            hour, minute = int(match.group(5)), match.group(6)
        if hour < 24 and int(minute) < 60:
            said.append((match.start(), f"{hour:02d}:{minute}"))
    return list(dict.fromkeys(time for _, time in sorted(said)))


_DATETIME = re.compile(r"^(\d{4}-\d{2}-\d{2}[T ])(\d{2}):(\d{2})(.*)$")


def _half_day_slip(value: str, request: str) -> str:
    """A date-time whose time of day is twelve hours off the one the request says ("between 2 and 4 pm":
    `T02:00` for 14:00), moved to it; anything else as it is."""
    match = _DATETIME.match(value)
    if match is None:
        return value
    said = said_clock_times(request)
    hour, minute = int(match.group(2)), match.group(3)
    if not said or f"{hour:02d}:{minute}" in said:
        return value
    other = f"{(hour + 12) % 24:02d}:{minute}"
    return f"{match.group(1)}{other}{match.group(4)}" if other in said else value


def _asks_clock(spec: Mapping[str, Any]) -> bool:
    return bool(_HH_MM.search(str(spec.get("description") or ""))) or spec.get("format") == "time"


def _said_time(request: str, value: str, arguments: Mapping[str, Any]) -> str | None:
    """The one time of day the request says, for a clock value it does not say; None when it says none or
    several, or when another argument holds it already (a start time beside this end time)."""
    said = said_clock_times(request)
    if len(said) != 1 or value in said or _CLOCK.match(value.strip()) is None:
        return None
    held = {_clock(other) for other in arguments.values() if isinstance(other, str)}
    return None if said[0] in held else said[0]


def _asks_season(spec: Mapping[str, Any]) -> bool:
    """The description asks for a season as `YYYY-YY`, or names a season over a `^[0-9]{4}-[0-9]{2}$` pattern."""
    description = str(spec.get("description") or "")
    pattern = str(spec.get("pattern") or "").replace("\\d", "[0-9]")
    return bool(_SEASON_FORM.search(description)) or (
        pattern == "^[0-9]{4}-[0-9]{2}$" and bool(_SEASON_WORDS.search(description))
    )


def said_seasons(request: str) -> list[str]:
    """The seasons a request states as two consecutive years, each as `YYYY-YY`, in order and once."""
    found: list[str] = []
    for match in _SAID_SEASON.finditer(request):
        first, second = int(match.group(1)), int(match.group(2)[-2:])
        season = f"{first}-{second:02d}"
        if second == (first + 1) % 100 and season not in found:
            found.append(season)
    return found


def _string(name: str, value: str, spec: Mapping[str, Any], request: str) -> str:
    kind = code_kind(name, spec)
    if kind is not None:
        return code_for(kind, value) or value
    description = str(spec.get("description") or "")
    if comma_form(spec):
        value = _joined_place(value, request, spec)
    if _asks_clock(spec):
        value = _clock(value)
    value = _half_day_slip(value, request)
    if (_DATE_ONLY.search(description) or spec.get("format") == "date") and (day := _DATE_WITH_TIME.match(value)):
        value = day.group(1)
    if _asks_season(spec) and len(seasons := said_seasons(request)) == 1:
        value = seasons[0]
    if _NO_SPACES.search(description):
        value = re.sub(r"\s+", "", value)
    if without := _WITHOUT_MARKS.search(description):
        value = _without_marks(value, without)
    if value not in request and value in digit_examples(spec) and len(shaped := shaped_numbers(request, spec)) == 1:
        value = shaped[0]  # the model copied the description's example
    return value


def _without_marks(value: str, said: re.Match[str]) -> str:
    """`value` without the marks the description says it is written without (`:white_check_mark:` ->
    `white_check_mark`), at the end it names ("leading", "trailing") or both; the value itself unless a
    value is left."""
    named = said.group(4).split()[0].casefold() if said.group(4) else ""
    marks = said.group(3) or next(mark for word, mark in _MARK_WORDS.items() if named.startswith(word))
    where = (said.group(1) or "").strip().casefold()
    strip = {"leading": value.lstrip, "trailing": value.rstrip}.get(where, value.strip)
    stripped = strip(marks)  # str.strip takes a set of characters: "::" strips colons
    return stripped if stripped.strip() else value


_COLUMN_NUMBER = re.compile(r"\bcolumn\b.*(?:\bA\s*=\s*1\b|1-based)|(?:\bA\s*=\s*1\b|1-based).*\bcolumn\b", re.I | re.S)
_COLUMN_LETTER = re.compile(r"\bcol(?:umn)?\s+([A-Z]{1,3})\b")


def _column_number(letters: str) -> int:
    """A spreadsheet column's number: A -> 1, Z -> 26, AA -> 27."""
    number = 0
    for letter in letters:
        number = number * 26 + ord(letter) - ord("A") + 1
    return number


def _number(value: float, spec: Mapping[str, Any], request: str) -> float:
    description = str(spec.get("description") or "")
    if _COLUMN_NUMBER.search(description) and len(columns := set(_COLUMN_LETTER.findall(request))) == 1:
        return _column_number(columns.pop())  # "before column D" for "column number (A=1)"
    if _DECIMAL.search(description) and value > 1:
        written = _number_text(value)
        if re.search(r"(?<![\d.])" + re.escape(written) + r"\s*(?:%|percent\b)", request, re.IGNORECASE):
            return round(value / 100, 10)
    if _PERCENT.search(description) and not _DECIMAL.search(description) and 0 < value < 1:
        percent = _number_text(round(value * 100, 8))
        if re.search(r"(?<![\d.])" + re.escape(percent) + r"\s*(?:%|percent\b)", request, re.IGNORECASE):
            return float(percent) if "." in percent else int(percent)
    return value


def as_said(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` with the dates and durations the request says put in place of what the model made of them
    (run before grounding drops what the request does not say, so a right value the model half wrote is kept):

    a date in the form the parameter asks for (`asked_form`): `2026-06-05` -> `06/05/2026` for "MM/DD/YYYY";
    a date the request does not say (`2026-`, a made-up day) -> the one date it says that no other argument
    holds; a number in the unit its parameter takes (`asked_unit`) -> the one duration the request says, in
    that unit (`3000` -> `180000` for `timeout_ms` and "3 minutes", `30` -> `360` for `term_months` and "30
    years"); a string whose description gives compact examples (`'5s', '2m'`) -> the one duration the
    request says, so written (`1.5 hours` -> `1h30m`); and the one date the request says that nothing holds,
    in the date parameter left unfilled that can hold it (`_placed_date`)."""
    properties = _mapping(schema, "properties")
    fixed = dict(arguments)
    said = said_dates(request)
    for name, value in arguments.items():
        spec = _mapping(properties, name)
        form = asked_form(spec)
        if form and isinstance(value, str) and said:
            day = next((day for day in read_date(value) if day in said), None)
            if day is None:
                held = {day for other, given in fixed.items() if other != name for day in _dates_of(given)}
                free = [day for day in said if day not in held]
                day = free[0] if len(free) == 1 else _at_end(request, free, bound_of(name))
            if day is not None:
                fixed[name] = written(day, form)
        elif isinstance(value, str) and _asks_uuid(name, spec):
            taken = {other for key, other in fixed.items() if key != name and isinstance(other, str)}
            uuids = [uuid for uuid in said_uuids(request) if uuid not in taken]
            if value.strip().lower() not in uuids and len(uuids) == 1:
                fixed[name] = uuids[0]
        elif isinstance(value, str) and (joiner := asks_compact(spec)) is not None:
            seconds = said_seconds(request)
            if len(seconds) == 1 and compact_seconds(value) != seconds[0]:
                fixed[name] = compact(seconds[0], joiner)
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and (unit := asked_unit(name, spec)):
            durations = said_in_unit(request, unit)
            if len(durations) == 1 and durations[0] != value:
                converted = durations[0]
                if spec.get("type") != "integer" or float(converted).is_integer():
                    fixed[name] = int(converted) if float(converted).is_integer() else converted
    return _placed_duration(request, properties, _placed_date(request, properties, fixed))


def _asks_uuid(name: str, spec: Mapping[str, Any]) -> bool:
    """The parameter takes a UUID: its `format` says so, or its description does."""
    return spec.get("format") == "uuid" or bool(re.search(r"\bUUID\b", str(spec.get("description") or "")))


def _placed_duration(request: str, properties: Mapping[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """`arguments` with the one duration the request says ("the past two days") given, in its unit, to the one
    numeric parameter that takes a duration (`hours_back`: 48) when it is left unfilled and nothing holds it."""
    said = said_durations(request)
    timed = {name: unit for name in properties if (unit := asked_unit(name, _mapping(properties, name)))}
    if len(said) != 1 or len(timed) != 1:
        return arguments
    name, unit = next(iter(timed.items()))
    value = in_unit(said[0], unit)
    held = {float(v) for v in arguments.values() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    if name in arguments or value is None or value in held:
        return arguments
    if _mapping(properties, name).get("type") == "integer" and not float(value).is_integer():
        return arguments
    return {**arguments, name: int(value) if float(value).is_integer() else value}


def _at_end(request: str, days: list[Any], end: str | None) -> Any:
    """Of two or more dates, the one at the `end` ("start", "end") of the range the request says: by its cue
    ("from Dec 23, 2026 through Jan 2, 2027"), else, of two dates with no cue, the earlier starts it."""
    if end is None:
        return None
    cued = [day for day in days if bound(request, day) == end]
    if len(cued) == 1:
        return cued[0]
    if len(days) == 2 and not any(bound(request, day) for day in days):
        return min(days) if end == "start" else max(days)
    return None


def _placed_date(request: str, properties: Mapping[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """`arguments` with the one date the request says that no argument holds given to the one date parameter
    left unfilled that can hold it: the tool's only one, or the end of a range the request puts it at ("since
    Jan 5th 2026": `start_date`, not `end_date`)."""
    held = {day for value in arguments.values() for day in _dates_of(value)}
    free = [day for day in said_dates(request) if day not in held]
    dated = {name: form for name, spec in properties.items() if (form := asked_form(_mapping(properties, name)))}
    if len(free) != 1 or not dated:
        return arguments
    unfilled = [name for name in dated if name not in arguments]
    if len(dated) > 1:
        end = bound(request, free[0])
        unfilled = [name for name in unfilled if end is not None and bound_of(name) == end]
    if len(unfilled) == 1:
        arguments = {**arguments, unfilled[0]: written(free[0], dated[unfilled[0]])}
    return arguments


def _dates_of(value: Any) -> list[Any]:
    return read_date(value) if isinstance(value, str) else []


def in_asked_form(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` with each top-level free value in the form its description asks for (module docstring)."""
    properties = _mapping(schema, "properties")
    fixed = dict(arguments)
    for name, value in arguments.items():
        spec = _mapping(properties, name)
        if any(key in spec for key in _FIXED) or isinstance(value, bool):
            continue
        if isinstance(value, str) and value.strip():
            fixed[name] = _string(name, value, spec, request)
            if _asks_clock(spec) and (said := _said_time(request, fixed[name], arguments)):
                fixed[name] = said
        elif isinstance(value, (int, float)) and spec.get("type") in ("integer", "number"):
            fixed[name] = _number(value, spec, request)
    return fixed


def quantity_echoes(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[str]:
    """Optional free strings whose whole value is a quantity of the request ("5 minutes", "$20") that a
    numeric argument already holds (as written, or as a duration in the unit that argument takes)."""
    properties = _mapping(schema, "properties")
    required = set(schema.get("required") or ())
    numbers = {
        name: value
        for name, value in arguments.items()
        if isinstance(value, (int, float)) and not isinstance(value, bool)
    }
    echoes = []
    for name, value in arguments.items():
        spec = _mapping(properties, name)
        match = _QUANTITY.match(value.strip()) if isinstance(value, str) else None
        if name in required or match is None or any(key in spec for key in _FIXED) or not numbers:
            continue
        held = {float(match.group(1))}
        durations = said_durations(value) if match.group(2) else []
        for other in numbers if len(durations) == 1 else ():
            unit = asked_unit(other, _mapping(properties, other))
            converted = in_unit(durations[0], unit) if unit else None
            held |= {converted} if converted is not None else set()
        if any(float(number) in held for number in numbers.values()) and value.strip() in request:
            echoes.append(name)
    return echoes
