"""Calendar dates as a request says them and as a parameter asks for them.

A small model copies "the 21st of November 2026" badly into a `YYYY-MM-DD` parameter (it writes `2026-` and
stops, or puts the date into the query); the date itself is plain in the request. `said_dates` reads the
dates a request writes out in full (with a year: `2026-11-21`, `November 21, 2026`, `21st of November 2026`,
`Nov 21st 2026`, `21 Nov 2026`); `asked_form` reads the form a parameter asks for (`format: date`, or
`YYYY-MM-DD`, `MM/DD/YYYY`, `DD/MM/YYYY`, `DD.MM.YYYY`, `YYYY/MM/DD` in its description); `written` is a date
in that form. A date without a year ("on the 5th") or relative to today ("tomorrow") is not read: which
year it means is the host's to say.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_SAID = [
    re.compile(r"(?<![\d-])(?P<year>(?:19|20)\d\d)-(?P<month>[01]\d)-(?P<day>[0-3]\d)(?![\d-])"),
    re.compile(rf"\b{_MONTH}\s+(?:the\s+)?{_DAY}\s*,?\s+{_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH}\s*,?\s+{_YEAR}\b", re.IGNORECASE),
]
"""An ISO date, or a month named in words with its day and year in either order."""

_FORMS = {
    "YYYY-MM-DD": "%Y-%m-%d",
    "MM/DD/YYYY": "%m/%d/%Y",
    "DD/MM/YYYY": "%d/%m/%Y",
    "MM-DD-YYYY": "%m-%d-%Y",
    "DD-MM-YYYY": "%d-%m-%Y",
    "DD.MM.YYYY": "%d.%m.%Y",
    "YYYY/MM/DD": "%Y/%m/%d",
    "YYYYMMDD": "%Y%m%d",
}
_ASKED = re.compile(r"(?<![A-Za-z])(" + "|".join(re.escape(form) for form in _FORMS) + r")(?![A-Za-z])", re.IGNORECASE)


def date_spans(text: str) -> list[tuple[int, int, dt.date]]:
    """Where `text` writes out a date with its year: (start, end, date), in order."""
    found = []
    for pattern in _SAID:
        for match in pattern.finditer(text):
            month = match.group("month").lower().rstrip(".")
            try:
                day = dt.date(int(match.group("year")), _MONTHS.get(month) or int(month), int(match.group("day")))
            except ValueError:  # "February 30, 2026"
                continue
            found.append((match.start(), match.end(), day))
    return sorted(found, key=lambda span: span[0])


def said_dates(request: str) -> list[dt.date]:
    """The calendar dates `request` writes out with their year, in order, once each."""
    return list(dict.fromkeys(day for _, _, day in date_spans(request)))


_CUES = {
    "start": re.compile(r"\b(?:since|after|from|starting|beginning)\s+(?:on\s+)?(?:the\s+)?$", re.IGNORECASE),
    "end": re.compile(r"\b(?:until|till|before|through|by|to|ending)\s+(?:on\s+)?(?:the\s+)?$", re.IGNORECASE),
}
_ENDS = {
    "start": frozenset(("start", "from", "after", "since", "begin", "min", "earliest", "oldest")),
    "end": frozenset(("end", "to", "before", "until", "max", "latest", "newest")),
}


def bound(request: str, day: dt.date) -> str | None:
    """Which end of a range the request puts `day` at: "start" ("since Jan 5th 2026"), "end" ("until ..."),
    or None when it says neither."""
    for start, _, said in date_spans(request):
        if said == day:
            return next((end for end, cue in _CUES.items() if cue.search(request[:start])), None)
    return None


def bound_of(name: str) -> str | None:
    """Which end of a range a parameter's name says it holds (`start_date`, `from_date`, `dateTo`)."""
    words = set(re.split(r"[^a-z]+", re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name).lower()))
    return next((end for end, named in _ENDS.items() if words & named), None)


def asked_form(spec: Mapping[str, Any]) -> str | None:
    """The `strftime` form a string parameter asks its dates in: its `format: date`, or the first form its
    description names (`YYYY-MM-DD`); None when it asks for no date alone (a `date-time`, a free string)."""
    if spec.get("type") not in (None, "string") or "enum" in spec:
        return None
    if spec.get("format") == "date":
        return _FORMS["YYYY-MM-DD"]
    found = _ASKED.search(str(spec.get("description") or ""))
    if found is None or re.match(r"[ T]?(?:HH|hh)", str(spec.get("description"))[found.end() :]):
        return None  # "YYYY-MM-DD HH:MM" asks for a time too
    return _FORMS[found.group(1).upper()]


def read_date(value: str) -> list[dt.date]:
    """The dates a value could be, read whole (a time of day after it aside): in a form above, or in any
    numeric form of `_FORMS` (`06/05/2026` is both June 5 and May 6)."""
    value = re.sub(r"[ T]\d{1,2}:\d{2}(?::\d{2})?$", "", value.strip())
    dates = [day for start, end, day in date_spans(value) if (start, end) == (0, len(value))]
    for form in _FORMS.values():
        try:
            dates.append(dt.datetime.strptime(value, form).date())
        except ValueError:
            continue
    return list(dict.fromkeys(dates))


def written(day: dt.date, form: str) -> str:
    return day.strftime(form)
