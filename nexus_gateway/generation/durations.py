"""Lengths of time as a request says them and in the unit a parameter asks for.

`said_durations` reads each length of time a request states, with figures or words: `3 minutes`, `90 mins`,
`1.5 hours`, `2 and a half hours`, `an hour and a half`, `half an hour`, `a minute`, `two weeks`, `30 years`.
`asked_unit` reads the unit a numeric parameter takes: named by the parameter (`timeout_ms`,
`duration_minutes`, `delaySeconds`, `term_months`) or by its description ("in seconds", "(ms)"). `in_unit` is
a duration in another unit: clock units convert among themselves (a week is 604,800 s), calendar units among
themselves (a year is 12 months); a month is no fixed number of days, so the two never mix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

_CLOCK = {"millisecond": 0.001, "second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800}
_CALENDAR = {"month": 1, "year": 12}
_SPELLINGS = {
    "ms": "millisecond",
    "msec": "millisecond",
    "msecs": "millisecond",
    "millis": "millisecond",
    "sec": "second",
    "secs": "second",
    "s": "second",
    "min": "minute",
    "mins": "minute",
    "hr": "hour",
    "hrs": "hour",
    "h": "hour",
    "wk": "week",
    "wks": "week",
    "mo": "month",
    "mos": "month",
    "yr": "year",
    "yrs": "year",
}
_NUMBER_WORDS = {
    word: float(number)
    for number, word in enumerate(
        ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"],
        start=0,
    )
} | {"a": 1.0, "an": 1.0, "a couple of": 2.0, "a few": 3.0, "fifteen": 15.0, "twenty": 20.0, "thirty": 30.0}
_UNIT = (
    r"(milliseconds?|millis|msecs?|ms|seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|wks?|months?|years?"
    r"|yrs?)"
)
_AMOUNT = r"(\d+(?:\.\d+)?|" + "|".join(sorted((re.escape(w) for w in _NUMBER_WORDS), key=len, reverse=True)) + ")"
_SAID = re.compile(
    rf"(?<![\w.])(?:(half)\s+an?\s+{_UNIT}|{_AMOUNT}(?:\s+and\s+a\s+(half))?[\s-]*{_UNIT}(?:\s+and\s+a\s+(half))?)\b",
    re.IGNORECASE,
)
_NAMED_UNIT = re.compile(
    r"(?:(?:^|_)(ms|millis|milliseconds|seconds|secs|sec|minutes|mins|hours|hrs|days|weeks|months|years)"
    r"|(?<=[a-z])(Ms|MS|Millis|Milliseconds|Seconds|Secs|Sec|Minutes|Mins|Hours|Days|Weeks|Months|Years))$"
    r"|^(seconds|minutes|hours|days|weeks|months|years)_?(?i:back|ago|old|before|since|window|lookback)$"
    r"|^(?:last|past|lookback)_?((?i:seconds|minutes|hours|days|weeks|months|years))$"
)
"""A unit at the end of a parameter's name, after `_` (`timeout_ms`) or in camel case (`delaySeconds`), or a
span back in time by its unit (`hours_back`, `days_ago`, `last_days`, `pastHours`)."""
_DESCRIBED_UNIT = re.compile(
    r"\b(?:in|as|of)\s+(milliseconds|seconds|minutes|hours|days|weeks|months|years)\b"
    r"|\((ms|milliseconds|seconds|secs|s|minutes|mins|hours|days|weeks|months|years)\)",
    re.IGNORECASE,
)


class Duration(NamedTuple):
    amount: float
    unit: str
    """One of `_CLOCK`'s or `_CALENDAR`'s units."""


def _unit(word: str) -> str:
    word = word.lower()
    word = _SPELLINGS.get(word, word)
    return word[:-1] if word.endswith("s") and word[:-1] in (_CLOCK | _CALENDAR) else word


def said_durations(request: str) -> list[Duration]:
    """Every length of time `request` states, in the unit it states it in."""
    found = []
    for match in _SAID.finditer(request):
        if match.group(1):  # "half an hour"
            found.append(Duration(0.5, _unit(match.group(2))))
            continue
        amount = match.group(3).lower()
        number = float(amount) if amount[0].isdigit() else _NUMBER_WORDS[amount]
        half = 0.5 if (match.group(4) or match.group(6)) else 0.0
        found.append(Duration(number + half, _unit(match.group(5))))
    return found


def asked_unit(name: str, spec: Mapping[str, Any]) -> str | None:
    """The unit a numeric parameter takes, by its name first, then its description; None when neither says."""
    if spec.get("type") not in ("integer", "number"):
        return None
    named = _NAMED_UNIT.search(name)
    if named:
        return _unit(next(group for group in named.groups() if group))
    described = _DESCRIBED_UNIT.search(str(spec.get("description") or ""))
    return _unit(described.group(1) or described.group(2)) if described else None


def in_unit(duration: Duration, unit: str) -> float | None:
    """`duration` in `unit`; None when the two cannot be converted (a month in days)."""
    for table in (_CLOCK, _CALENDAR):
        if duration.unit in table and unit in table:
            value = duration.amount * table[duration.unit] / table[unit]
            return round(value, 6)
    return None


def said_in_unit(request: str, unit: str) -> list[float]:
    """The request's durations in `unit` (those that convert to it), once each."""
    values = (in_unit(duration, unit) for duration in said_durations(request))
    return list(dict.fromkeys(value for value in values if value is not None))


_COMPACT_PART = re.compile(r"(\d+(?:\.\d+)?)\s?(ms|w|d|h|m|s)(?![a-z])", re.IGNORECASE)
_COMPACT = re.compile(r"^\s*(?:\d+(?:\.\d+)?\s?(?:ms|w|d|h|m|s)\s*)+$", re.IGNORECASE)
_COMPACT_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_COMPACT_EXAMPLE = re.compile(r"(?<![\w.])\d+(?:ms|[smhdw])(?:\s?\d+(?:ms|[smhdw]))*(?![\w.])")
"""A length of time written compactly in a description's examples: `5s`, `2m`, `3h`, `1h 30m`, `1d`."""


def compact_seconds(text: str) -> float | None:
    """The seconds a compact length of time stands for (`90m` 5400, `1h 30m` 5400, `500ms` 0.5), None when
    `text` is not one."""
    if not _COMPACT.match(text):
        return None
    return round(sum(float(n) * _COMPACT_UNITS[u.lower()] for n, u in _COMPACT_PART.findall(text)), 6)


def asks_compact(spec: Mapping[str, Any]) -> str | None:
    """How a string parameter whose description gives compact examples (`'5s', '2m', '3h'`; `'1h 30m'`)
    joins two units: " " when an example does, "" otherwise; None when the description gives none."""
    if spec.get("type") not in (None, "string") or any(key in spec for key in ("enum", "const")):
        return None
    examples = _COMPACT_EXAMPLE.findall(str(spec.get("description") or ""))
    if not examples:
        return None
    return " " if any(" " in example for example in examples) else ""


def compact(seconds: float, joiner: str = "") -> str:
    """`seconds` written compactly in hours, minutes and seconds (`5400` -> `1h30m`; a whole number of
    days or weeks as such: `2d`)."""
    for unit, size in (("w", 604800), ("d", 86400)):
        if seconds >= size and float(seconds / size).is_integer():
            return f"{int(seconds // size)}{unit}"
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    parts, rest = [], round(seconds)
    for unit, size in (("h", 3600), ("m", 60), ("s", 1)):
        if rest >= size:
            parts.append(f"{rest // size}{unit}")
            rest %= size
    return joiner.join(parts)


def said_seconds(request: str) -> list[float]:
    """The request's clock durations in seconds, once each."""
    return said_in_unit(request, "second")


_COUNTED = (
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
)
_COUNT_WORDS = {word: number for number, word in enumerate(_COUNTED, start=2)} | {
    "a dozen": 12,
    "a couple of": 2,
    "a pair of": 2,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "a hundred": 100,
}
_SAID_COUNT = re.compile(
    r"(?<![\w-])(" + "|".join(sorted(map(re.escape, _COUNT_WORDS), key=len, reverse=True)) + r")(?![\w-])", re.I
)


def said_numbers(request: str) -> list[int]:
    """The numbers `request` writes in words ("two empty columns", "a dozen rows"); "one" and "a" are left
    out (a pronoun and an article more often than a count)."""
    return list(dict.fromkeys(_COUNT_WORDS[match.group(1).lower()] for match in _SAID_COUNT.finditer(request)))
