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
(`as_written`): the case of the request (`construction site`, not `Construction Site`), the plural the
request uses when the model wrote its singular (`cats` in "influenza in cats", not `cat`), and an identifier
copied with a slip (`C12345678` for the request's `C1234567`: a small model drops or doubles a digit of a long
id) as the one identifier of the request it is a character or two from.

A value that is the request itself, copied whole or nearly (`echoes`: "what time is it in Paris" as a
browser tool's `text`), is supported by the letter but says nothing of the tool's fit: any tool with a
free-text parameter can be filled that way. It is counted apart (`Grounding.echoed`) and is no evidence.

When a value is not supported, `narrowing` gives, per parameter, the values of the request that fit its
kind (zones whose place the request names, URLs, paths, dates, e-mail addresses, numbers), so the value
can be decoded again among those only; a parameter of no known kind, or one the request holds no value
of, gets none.

Optional arguments are not counted: a small model fills them with plausible inventions for the right
tool as often as for the wrong one (measured on Seal-Tools; README). Those inventions are dropped from the
call instead (`invented_optional`): an optional value the request never gave should be the tool's default.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nexus_gateway.generation.dates import read_date, said_dates
from nexus_gateway.generation.domains import has_domain, spoken_forms, time_zones
from nexus_gateway.generation.durations import asked_unit, compact_seconds, said_in_unit, said_numbers, said_seconds

_GLUED_BEFORE = r"(?<![\w/\\~.-])"
_GLUED_AFTER = r"(?![\w/\\~@-]|\.\w)"
"""A span is whole when no path or identifier character touches it (a sentence's final `.` may)."""


@dataclass(frozen=True)
class Grounding:
    supported: int
    """Free values of the required arguments that the request contains."""
    free: int
    """Free values of the required arguments (enum choices, booleans and empty values are not counted)."""
    echoed: int = 0
    """Supported values that are the request itself, copied whole or nearly (`echoes`), or one value put into
    several parameters (`_repeated`): no evidence of fit."""

    @property
    def invented(self) -> int:
        return self.free - self.supported

    @property
    def evidence(self) -> int:
        """Supported values that are not an echo of the request: what the request says for this tool."""
        return self.supported - self.echoed


def occurs(span: str, request: str) -> bool:
    """`span` is in `request` as written (case aside), as a whole span."""
    return _found(span, request) is not None


def _found(span: str, request: str) -> str | None:
    """The request's own spelling of `span` where it occurs as a whole span (case aside), else None."""
    span = span.strip()
    match = re.search(_GLUED_BEFORE + re.escape(span) + _GLUED_AFTER, request, re.IGNORECASE) if span else None
    return match.group(0) if match else None


def _named(word: str, request: str) -> bool:
    """`word` (a domain value's name: "German", "euros", "Tokyo") is in `request` as a whole span, or as the
    first part of a hyphenated compound ("German-language articles", "Tokyo-based")."""
    return occurs(word, request) or bool(
        word.strip() and re.search(_GLUED_BEFORE + re.escape(word.strip()) + r"-[A-Za-z]", request, re.IGNORECASE)
    )


_PLURALS = ("s", "es")
_FIXED = ("enum", "const", "format", "pattern")


def as_written(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` with each free top-level string written as the request writes it: the request's case, the
    request's plural of a singular the model wrote, an identifier copied with a slip, or the span the request
    quotes when the value adds words to it, or a URL copied without its scheme. Other values, and strings the
    request does not hold in any of these ways, are left as they are."""
    properties = _mapping(schema, "properties")
    written = dict(arguments)
    for name, value in arguments.items():
        spec = _mapping(properties, name)
        if not isinstance(value, str) or any(k in spec for k in _FIXED) or spoken_forms(name, spec, value):
            continue
        found = _found(value, request)
        if found is None and value.strip() and value.strip()[-1].isalpha():
            found = next(filter(None, (_found(value.strip() + ending, request) for ending in _PLURALS)), None)
        if found is None:
            found = _slipped_identifier(value, request) or _quoted_within(value, request) or _relative(value, request)
            found = found or _with_scheme(value, request)
        if found is None:
            found = _cut_tail(value, request) or _without_other_value(value, request, arguments, name)
        if found is not None and found != value:
            written[name] = found
    return written


_SCHEMED = re.compile(r"(?<!\S)([A-Za-z][A-Za-z0-9+.-]*://)(\S+)")
"""A URL or connection string with its scheme: `mongodb+srv://user@host/db`, `postgres://...`, `s3://bucket/key`."""


def _with_scheme(value: str, request: str) -> str | None:
    """The request's URL that `value` is without its scheme (`reporting@cluster0.example.net/analytics` for
    "mongodb+srv://reporting@cluster0.example.net/analytics"): the model began copying after the `://`."""
    for match in _SCHEMED.finditer(request):
        rest = match.group(2).rstrip(".,;:!?)")
        if value.strip() == rest:
            return match.group(1) + rest
    return None


def _without_other_value(value: str, request: str, arguments: Mapping[str, Any], name: str) -> str | None:
    """The request's word that `value` is with another argument's value joined to it (`frontend-service` for
    "the frontend service" when `resourceType` is `service`; `payments_deployment`)."""
    for other, held in arguments.items():
        if other == name or not isinstance(held, str) or len(held.strip()) < 3:
            continue
        joined = re.escape(held.strip())
        rest = re.fullmatch(rf"(?:{joined}[-_ ](.+)|(.+?)[-_ ]{joined})", value.strip(), re.IGNORECASE)
        found = _found(rest.group(1) or rest.group(2), request) if rest else None
        if found is not None:
            return found
    return None


def _relative(value: str, request: str) -> str | None:
    """The request's relative path that `value` is with a `/` put before it (`/billing/parsers.py` for
    "billing/parsers.py"): the model made it absolute, the request did not."""
    if not value.startswith("/") or value.startswith("//"):
        return None
    found = _found(value[1:], request)
    return found if found is not None and "/" in found else None


_TAIL = re.compile(r":\s+(.{8,}?)\s*$", re.DOTALL)
"""What follows the request's last colon and a space, to its end: a command, a query, a message given last."""


def _cut_tail(value: str, request: str) -> str | None:
    """The text the request gives after its colon (`run this on duckdb: SELECT ...`) when `value` is that text
    cut short or with a space lost (`... GROUP BY regionORDER`): at least half of it, the same characters up
    to where it stops."""
    tail = _TAIL.search(request)
    if tail is None:
        return None
    whole = tail.group(1)
    squeezed, given = re.sub(r"\s+", "", whole), re.sub(r"\s+", "", value)
    if len(given) * 2 < len(squeezed) or given == squeezed:
        return None
    common = 0
    for a, b in zip(given, squeezed, strict=False):
        if a != b:
            break
        common += 1
    return whole if common >= len(given) - 2 and common * 2 >= len(squeezed) else None


def _quoted_within(value: str, request: str) -> str | None:
    """The one span the request quotes that `value` (not in the request) holds with words around it that the
    request never uses: the user spelled the value out, the model added to it ("add 'Dentist' to my
    calendar": `Dentist`, not `Dentist Appointment`). Words of the request around it are kept: the value
    is then composed from the request, not embellished."""
    held = [
        span for span in set(_quoted(request)) if re.search(rf"(?<!\w){re.escape(span)}(?!\w)", value, re.IGNORECASE)
    ]
    if len(held) != 1 or held[0].strip() == value.strip():
        return None
    around = re.sub(rf"(?<!\w){re.escape(held[0])}(?!\w)", " ", value, flags=re.IGNORECASE)
    said = {word.casefold() for word in _WORD.findall(request)}
    return None if any(word.casefold() in said for word in _WORD.findall(around)) else held[0]


_IDENTIFIER = re.compile(r"(?<![\w.@/-])(?=[\w.-]*\d)(?=[\w.-]*[A-Za-z])[A-Za-z0-9][\w.-]{4,}[A-Za-z0-9](?![\w@/-])")
"""An identifier of the request: six characters or more, letters and digits both (`C1234567`, `PROJ-88`)."""
_LONG_NUMBER = re.compile(r"(?<![\w.@/-])\d[\d.-]{6,}\d(?![\w@/-])")
"""A numeric identifier: eight characters or more, digits with dots and dashes between (`1733412345.004200`, a
Slack message's timestamp; `4711-0815-2`)."""


_CUT_ENDS = 3
"""How many characters an identifier copied from the request may have lost at its ends (`7QX2LM9P` for
`KB7QX2LM9P`: a prefix the model took for decoration) and still be that identifier."""


def _slipped_identifier(value: str, request: str) -> str | None:
    """The one identifier of the request that `value` (itself identifier-shaped, not in the request) is at most
    two edits from (one for ids under ten characters), or is with a few characters cut from its ends, else
    None."""
    value = value.strip()
    shape = next((shape for shape in (_IDENTIFIER, _LONG_NUMBER) if shape.fullmatch(value)), None)
    if shape is None:
        return None
    limit = 1 if len(value) < 10 else 2
    near = {
        token
        for token in shape.findall(request)
        if _edits(value, token, limit) <= limit or (value in token and len(token) - len(value) <= _CUT_ENDS)
    }
    return near.pop() if len(near) == 1 else None


def _edits(a: str, b: str, limit: int) -> int:
    """Levenshtein distance of `a` and `b`, or `limit + 1` once it is known to exceed `limit`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        current = [i]
        for j, other in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other)))
        if min(current) > limit:
            return limit + 1
        previous = current
    return previous[-1]


def _mapping(spec: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = spec.get(key)
    return value if isinstance(value, Mapping) else {}


def _values(value: Any, spec: Mapping[str, Any]) -> list[Any]:
    """The free scalar values inside one argument (lists and nested objects are walked)."""
    choices = spec.get("enum")
    if isinstance(choices, list) and not isinstance(value, (list, dict)) and value not in choices:
        return [value]  # off a list the description gives (plain.py): a free value like any other
    if "enum" in spec or "const" in spec or isinstance(value, bool) or value is None or value == "":
        return []
    if isinstance(value, list):
        return [v for item in value for v in _values(item, _mapping(spec, "items"))]
    if isinstance(value, dict):
        properties = _mapping(spec, "properties")
        return [v for key, item in value.items() for v in _values(item, _mapping(properties, key))]
    return [value]


_CELL_RANGE = re.compile(r"(?<![\w$])\$?[A-Za-z]{1,3}\$?\d+:\$?[A-Za-z]{1,3}\$?\d+(?!\w)")
"""A spreadsheet range (`A1:F500`, `$B$2:$D$9`): the numbers in it name cells."""


def _said(item: Any, request: str, name: str, spec: Mapping[str, Any]) -> bool:
    if isinstance(item, str) and not _fits_shape(item, name, spec):
        return False  # "octo/app" as a `user_google_email` is in the request, but not as an e-mail address
    if isinstance(item, (int, float)):
        written = {repr(item), str(int(item))} if isinstance(item, float) and item.is_integer() else {repr(item)}
        numbers = _CELL_RANGE.sub(" ", request)  # the 1 of `A1:F500` is a cell's, not a count or a row
        if any(re.search(rf"(?<![\d.]){re.escape(form)}(?!\.?\d)", numbers) for form in written):
            return True
        if float(item) in said_numbers(request):  # 2 for "insert two empty columns"
            return True
        unit = asked_unit(name, spec)  # 180000 for `timeout_ms` is "3 minutes"
        return unit is not None and float(item) in said_in_unit(request, unit)
    forms = spoken_forms(name, spec, str(item))
    if forms is not None:
        return any(_named(form, request) for form in forms)
    text = str(item)
    return (
        occurs(text, request)
        or _in_slug(text, request)
        or _same_clock_time(text, request)
        or not set(read_date(text)).isdisjoint(said_dates(request))
        or _same_duration(text, request)
        or _same_uuid(text, request)
        or _named_in_pieces(text, request, name)
    )


_UUID = re.compile(
    r"(?<![0-9a-f])([0-9a-f]{8})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{12})(?![0-9a-f])", re.I
)


def _same_uuid(value: str, request: str) -> bool:
    """`value` is a UUID the request holds, in any of its spellings (said_uuids)."""
    match = _UUID.fullmatch(value.strip())
    return match is not None and "-".join(match.groups()).lower() in said_uuids(request)


def said_uuids(request: str) -> list[str]:
    """The UUIDs the request holds, hyphenated or as the 32 hex digits a URL carries them in (a Notion page's
    ".../Q1-Hiring-Plan-8f3c2a9d4b7e4e21a6c05d9f1b2e3a47"), each written `8-4-4-4-12` in lower case."""
    return list(dict.fromkeys("-".join(match.groups()).lower() for match in _UUID.finditer(request)))


def _same_duration(value: str, request: str) -> bool:
    """`value` is a length of time the request says, written compactly (`90m`, `1h 30m` for "90 minutes")."""
    seconds = compact_seconds(value)
    return seconds is not None and seconds in said_seconds(request)


def _named_in_pieces(value: str, request: str, name: str) -> bool:
    """`value` is a name (its parameter's name says so: `full_name`, `recipientName`) composed of proper nouns
    the request gives apart: "her first name is Deborah and her last name is Okafor" grounds `Deborah Okafor`.
    Each of its two to four words is capitalized and written so in the request."""
    words = value.split()
    return (
        "name" in re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).lower().replace("_", " ").replace("-", " ").split()
        and 2 <= len(words) <= 4
        and all(word[:1].isupper() and re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", request) for word in words)
    )


def _in_slug(value: str, request: str) -> bool:
    """`value` is one side of a slug of the request: `octo` and `app` of "octo/app" (an owner and a repository),
    or a whole segment of the path of one of its URLs: `C02ABCD1234` of ".../archives/C02ABCD1234/p17...",
    `octo`, `app` and `42` of "https://github.com/octo/app/pull/42"."""
    value = value.strip().casefold()
    if not value or "/" in value:
        return False
    if any(value in slug.casefold().split("/") for slug in SLUG.findall(request)):
        return True
    segments = (
        segment for url in _URL.findall(request) for segment in re.split(r"[/?#&=]", url.casefold().split("://", 1)[-1])
    )
    return any(value == segment.rstrip(_TRAILING) for segment in segments)


_CLOCK = re.compile(r"^0?(\d{1,2}):(\d{2})$")


def _same_clock_time(value: str, request: str) -> bool:
    """`value` is a time of day the request writes with or without a leading zero (`09:30` for "9:30"), or on
    the 12-hour clock (`15:00` for "3pm", "3 PM" or "3:00 p.m."; `09:30` for "9:30am")."""
    match = _CLOCK.match(value.strip())
    if match is None:
        return False
    hour, minute = int(match.group(1)), match.group(2)
    if any(occurs(form, request) for form in (f"{hour}:{minute}", f"{hour:02d}:{minute}")):
        return True
    for said in _TWELVE_HOUR.finditer(request):
        said_hour, said_minute = int(said.group(1)), said.group(2) or "00"
        afternoon = said.group(3).lower().startswith("p")
        if 1 <= said_hour <= 12 and (said_hour % 12 + 12 * afternoon, said_minute) == (hour, minute):
            return True
    return False


_TWELVE_HOUR = re.compile(r"(?<![\d:])(\d{1,2})(?::(\d{2}))?\s*([ap])\.?\s?m\b\.?", re.IGNORECASE)


_WORD = re.compile(r"\w+")
ECHO_SHARE = 0.9
"""A value holding this share of the request's words (at least 3 of them) is the request copied."""


def echoes(value: Any, request: str) -> bool:
    """`value` is the request itself, copied whole or nearly: it holds at least `ECHO_SHARE` of the
    request's words (counted with repeats, at least 3) and is not much longer. A path or a name taken
    from a short request ("read ~/notes/todo.md": 3 words of 4) is not an echo; "what time is it in
    Paris" for "what time is it in Paris?" is."""
    if not isinstance(value, str):
        return False
    asked = [word.lower() for word in _WORD.findall(request)]
    given = [word.lower() for word in _WORD.findall(value)]
    if len(asked) < 3 or not given or len(given) > 2 * len(asked):
        return False
    pool = Counter(given)
    shared = sum(min(count, pool[word]) for word, count in Counter(asked).items())
    return shared >= ECHO_SHARE * len(asked)


def _per_argument(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Grounding]:
    properties = _mapping(schema, "properties")
    result = {}
    for name, value in arguments.items():
        spec = _mapping(properties, name)
        items = _values(value, spec)
        others = {other: given for other, given in arguments.items() if other != name}
        rest = _without_urls_held(_without_quotes_held(request, others), others)
        said = [item for item in items if _said(item, rest, name, spec)]
        echoed = sum(echoes(item, request) for item in said)
        result[name] = Grounding(len(said), len(items), echoed)
    return result


def _without_quotes_held(request: str, others: Mapping[str, Any]) -> str:
    """`request` with the spans it quotes that another argument holds whole blanked out: what is inside a
    quoted message is the message's (`channel_id: "5"` is not in "post 'standup in 5'" once `text` holds
    'standup in 5')."""
    held = {value.strip().casefold() for value in others.values() if isinstance(value, str) and value.strip()}
    for span in _quoted(request):
        if span.strip().casefold() in held:
            request = request.replace(span, " " * len(span))
    return request


def _without_urls_held(request: str, others: Mapping[str, Any]) -> str:
    """`request` with the URLs another argument holds (at any depth) blanked out: a segment of a URL that is
    passed whole is not a value of its own (`projectSlug: "acme"` beside `projectURL:
    "https://app.circleci.com/pipelines/gh/acme/api/1432"`)."""
    held = "\n".join(_strings(dict(others)))
    for url in _URL.findall(request):
        url = url.rstrip(_TRAILING)
        if url in held:
            request = request.replace(url, " " * len(url))
    return request


def grounding(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> Grounding:
    """How many of the free values of the required arguments in `arguments` the request supports (and how
    many of those only echo it)."""
    required = set(schema.get("required") or ())
    per = {name: g for name, g in _per_argument(request, schema, arguments).items() if name in required}
    counted = list(per.values())
    blank = sum(isinstance(value, str) and not value.strip() for name, value in arguments.items() if name in required)
    return Grounding(
        sum(g.supported for g in counted),
        sum(g.free for g in counted) + blank,  # a required value left empty is one the request did not give
        sum(g.echoed for g in counted) + _repeated(arguments, per),
    )


def _repeated(arguments: Mapping[str, Any], per: Mapping[str, Grounding]) -> int:
    """Supported values (not already echoes) that fill more than one parameter: one word of the request put
    into every slot (`{"user_email": "restart", "script_id": "restart", "deployment_id": "restart"}`) is
    the model having nothing to say for any of them, so none of them is evidence."""
    owners: dict[str, list[str]] = {}
    for name, g in per.items():
        value = arguments.get(name)
        if isinstance(value, str) and value.strip() and g.supported and not g.echoed:
            owners.setdefault(value.strip().casefold(), []).append(name)
    return sum(len(names) for names in owners.values() if len(names) > 1)


def invented_optional(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[str]:
    """The optional arguments with a value the request does not contain: the model's inventions, dropped
    before the call so the tool's own defaults apply (on 100 Seal-Tools cases the 270M model invented 57
    of them; dropping them changed no case's correctness). An empty string is no value either: the model's
    way of skipping a parameter (`"username": ""`), dropped the same."""
    required = set(schema.get("required") or ())
    per = _per_argument(request, schema, arguments)
    return [name for name, g in per.items() if name not in required and (g.invented or arguments[name] == "")]


def without_nested_inventions(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` without the optional members of their nested objects (at any depth, in lists too) that
    hold a free value the request does not contain: `guest: {full_name: "Marcus Lee", email:
    "marcus@example.com"}` for "guest name Marcus Lee" keeps the name only; an empty object in a list is left
    out, and so is an optional argument this leaves an empty object or list. `schema` is read as written: give
    it `plain.plain`'s flat form."""
    properties = _mapping(schema, "properties")
    required = set(schema.get("required") or ())
    kept: dict[str, Any] = {}
    for name, value in arguments.items():
        trimmed = _trimmed(request, name, value, _mapping(properties, name))
        if trimmed not in ({}, []) or value in ({}, []) or name in required:
            kept[name] = trimmed
    return kept


def _trimmed(request: str, name: str, value: Any, spec: Mapping[str, Any]) -> Any:
    if isinstance(value, list):  # an object all of whose members were invented is itself invented, an empty one too
        trimmed = [_trimmed(request, name, item, _mapping(spec, "items")) for item in value]
        return [kept for kept in trimmed if kept != {}]
    if not isinstance(value, dict):
        return value
    members = _mapping(spec, "properties")
    required = set(spec.get("required") or ())
    kept = {}
    for key, item in value.items():
        member = _mapping(members, key)
        rest = _without_urls_held(request, {other: given for other, given in value.items() if other != key})
        if isinstance(item, (dict, list)):
            kept[key] = _trimmed(request, key, item, member)
        elif key in required or all(_said(free, rest, key, member) for free in _values(item, member)):
            kept[key] = item
    return kept


def ungrounded(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[str]:
    """The arguments (required or not) holding a free value the request does not contain as written."""
    return [name for name, g in _per_argument(request, schema, arguments).items() if g.invented]


_URL = re.compile(r"\bhttps?://[^\s\"'<>]+", re.IGNORECASE)
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_PATH = re.compile(r"(?<![\w/\\~.-])(?:~|\.{1,2})?/[^\s\"'<>,;]*|(?<![\w])[A-Za-z]:\\[^\s\"'<>,;]*")
_DATE_TIME = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?\b")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w]|\.\d)")
_TRAILING = ".,;:!?)]}'\""
_KIND_WORDS = {
    "url": re.compile(r"\b(urls?|uri|links?|web ?address|website)\b", re.IGNORECASE),
    "path": re.compile(r"\b(path|file ?path|directory|folder|dir)\b", re.IGNORECASE),
    "email": re.compile(r"\be-?mail\b", re.IGNORECASE),
    "date": re.compile(r"\b(yyyy-mm-dd|iso ?8601|iso date|date)\b", re.IGNORECASE),
}


def _kind(name: str, spec: Mapping[str, Any]) -> str | None:
    """What kind of value a parameter wants, from its type, format, name and description."""
    kind = spec.get("type")
    if kind in ("integer", "number"):
        return str(kind)
    if kind not in (None, "string") or any(key in spec for key in ("enum", "const")):
        return None
    if spoken_forms(name, spec, "Etc/UTC") is not None:
        return "zone"
    form = str(spec.get("format") or "")
    if form in ("uri", "url", "iri", "uri-reference"):
        return "url"
    if form in ("email", "idn-email"):
        return "email"
    if form in ("date", "date-time"):
        return form
    words = f"{name.replace('_', ' ')} {spec.get('title') or ''} {spec.get('description') or ''}"
    named = f"{name.replace('_', ' ')} {spec.get('title') or ''}"
    for kind_name in ("url", "email", "path"):  # the parameter's own name first, then its description
        if _KIND_WORDS[kind_name].search(named):
            return kind_name
    return next((k for k in ("url", "email", "date") if _KIND_WORDS[k].search(words)), None)


_SHAPES = {
    "email": _EMAIL,
    "url": re.compile(r"(?:[a-z][\w+.-]*://\S+|(?:[\w-]+\.)+[a-z]{2,}(?::\d+)?(?:/\S*)?)", re.IGNORECASE),
    "date": _DATE,
    "date-time": _DATE_TIME,
    "id": re.compile(r"\S+"),
    "path": re.compile(r"\S*[/\\~.]\S*"),
    "ticker": re.compile(r"\$?[A-Z][A-Z0-9]{0,5}(?:[.:-][A-Z0-9]{1,4})?"),
}
"""What a value of a kind looks like, whatever the request says: a value of another shape is not that kind's."""


_SHAPED_NAME = {
    "email": re.compile(r"(?:^|_)e-?mail(?:_?address)?$|email$", re.IGNORECASE),
    "url": re.compile(r"(?:^|_)(?:url|uri)$", re.IGNORECASE),
    "id": re.compile(r"(?:^|[_-])(?:id|ids|ID|IDs)$|(?<=[a-z])(?:Id|Ids|ID)$"),
    "path": re.compile(r"(?:^|[_-])(?:path|paths)$|(?<=[a-z])Paths?$"),
    "ticker": re.compile(r"(?:^|_)(?:ticker|tickers|stock_?symbol)$|(?<=[a-z])Ticker$", re.IGNORECASE),
}
_STOCK_SYMBOL = re.compile(r"\b(?:ticker|stock symbol)\b", re.IGNORECASE)


def _fits_shape(value: str, name: str, spec: Mapping[str, Any]) -> bool:
    """Whether a string has the shape its parameter asks for by its format or its very name (`format: email`
    or `user_google_email`: an e-mail address; `format: uri` or `url`: a URL or host name; `format: date`: a
    date; `sessionId`, `project_id`: one token, no spaces; `repo_path`, `filePath`: a path, with a `/`, `\\`,
    `~` or `.` in it, not a bare word such as "staging"; `ticker`, or a `symbol` its description calls a
    ticker or stock symbol: a ticker such as `AAPL` or `VOW3.DE`, not a company's name such as "Volkswagen");
    any string fits a parameter that asks for none."""
    form = str(spec.get("format") or "")
    kind = {"email": "email", "idn-email": "email", "uri": "url", "url": "url", "iri": "url"}.get(form, form)
    if kind not in _SHAPES:
        kind = next((k for k, pattern in _SHAPED_NAME.items() if pattern.search(name)), "")
    if not kind and name.lower().endswith("symbol") and _STOCK_SYMBOL.search(str(spec.get("description") or "")):
        kind = "ticker"
    shape = _SHAPES.get(kind)
    fits = shape is None or shape.fullmatch(value.strip()) is not None
    return fits and (has_domain(name, spec) or _like_examples(value, spec))  # "UTC" is a zone like "Asia/Tokyo"


_EXAMPLES = re.compile(
    r"""(?:e\.g\.?|for example|such as|example:?)\s*,?\s*\(?((?:["'`][^"'`\s]{2,80}["'`][\s,or]*)+)""", re.I
)


_OF_RESULTS = re.compile(r"\b(?:results?|returns?|returned|outputs?|response|responses)\b", re.IGNORECASE)
"""Words of a clause that gives examples of what a tool answers, not of what a parameter takes."""


def _like_examples(value: str, spec: Mapping[str, Any]) -> bool:
    """A value has the separators every example its description gives has: a `/` for `"gh/organization/project"`
    (not `ENG-88`), a `:` for `` `arxiv:1706.03762` ``; any value fits a description that gives none, or gives
    them of its results ("results include file paths relative to the repo root (e.g., "src/main.py")")."""
    description = str(spec.get("description") or "")
    found = _EXAMPLES.search(description)
    clause = re.split(r"[.;\n]\s", description[: found.start()])[-1] if found else ""
    if found and _OF_RESULTS.search(clause):
        return True
    examples = re.findall(r"""["'`]([^"'`\s]{2,80})["'`]""", found.group(1)) if found else []
    return not examples or all(mark in value for mark in "/:" if all(mark in example for example in examples))


def _spans(pattern: re.Pattern[str], request: str) -> list[str]:
    found = (match.group(0).rstrip(_TRAILING) for match in pattern.finditer(request))
    return list(dict.fromkeys(span for span in found if span))


def _zones(request: str, name: str, spec: Mapping[str, Any]) -> list[str]:
    """The zones the request names by their place (`Europe/Paris` for "Paris"); a place that several zones
    share gives them all."""
    return [
        zone for zone in time_zones() if any(occurs(form, request) for form in spoken_forms(name, spec, zone) or ())
    ]


def request_values(request: str, name: str, spec: Mapping[str, Any]) -> list[Any]:
    """The values in `request` that fit the parameter `name` (of schema `spec`), in the request's order;
    empty when the parameter is of no kind known here or the request holds none."""
    kind = _kind(name, spec)
    if kind == "zone":
        return _zones(request, name, spec)
    if kind in ("integer", "number"):
        numbers = [float(span) for span in _spans(_NUMBER, request)]
        if kind == "integer":
            return [int(number) for number in numbers if number.is_integer()]
        return [int(number) if number.is_integer() else number for number in numbers]
    patterns = {"url": _URL, "email": _EMAIL, "path": _PATH, "date": _DATE, "date-time": _DATE_TIME}
    if kind in patterns:
        return _spans(patterns[kind], request)
    return shaped_numbers(request, spec) if kind is None and spec.get("type") in (None, "string") else []


_NUMBER_SHAPE = re.compile(r"""["'`](\d+(?:[.:/-]\d+)+)["'`]""")
"""A quoted example of digits and separators in a description: `'1234567890.123456'` (a Slack timestamp)."""


def digit_examples(spec: Mapping[str, Any]) -> list[str]:
    """The examples of digits and separators a parameter's description quotes (`'1234567890.123456'`)."""
    return _NUMBER_SHAPE.findall(str(spec.get("description") or ""))


def shaped_numbers(request: str, spec: Mapping[str, Any]) -> list[str]:
    """The request's digit runs that have as many digits as an example its description quotes
    (`'1234567890.123456'`), written with the example's separators: a Slack permalink's `p1764950400123456`
    gives `1764950400.123456`. A description that says a value's format by an example says how to write the
    digits the request has, often without the separators (a link, an id pasted whole)."""
    found: list[str] = []
    for example in digit_examples(spec):
        pieces = re.split(r"(\D)", example)  # digits, separator, digits, ...
        sizes = [len(piece) for piece in pieces[::2]]
        for run in re.findall(r"\d+", request):
            if run == example or len(run) != sum(sizes):
                continue
            cut, written = 0, []
            for size, separator in zip(sizes, [*pieces[1::2], ""], strict=True):
                written.append(run[cut : cut + size] + separator)
                cut += size
            found.append("".join(written))
        found.extend(span for span in re.findall(r"\d+(?:[.:/-]\d+)+", request) if _shape(span) == _shape(example))
    return list(dict.fromkeys(found))


def _shape(text: str) -> str:
    return re.sub(r"\d", "9", text)


def narrowing(request: str, schema: Mapping[str, Any], names: Sequence[str]) -> dict[str, list[Any]]:
    """For each of `names` (parameters whose value the request did not support), the request's values that
    fit it; parameters with none are left out. Decoding again with these as the parameters' only choices
    (`ArgumentGenerator.generate(narrowed=...)`) either grounds the value or shows that it cannot be."""
    properties = _mapping(schema, "properties")
    narrowed = {}
    for name in names:
        values = request_values(request, name, _mapping(properties, name))
        if values:
            narrowed[name] = values
    return narrowed


def narrowed_schema(schema: Mapping[str, Any], narrowed: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
    """`schema` (a copy) with each parameter of `narrowed` allowed only its values (an enum, for decoding
    only: the result is still judged against the tool's own schema)."""
    properties = dict(_mapping(schema, "properties"))
    for name, values in narrowed.items():
        spec = {k: v for k, v in _mapping(properties, name).items() if k not in ("pattern", "format", "enum")}
        properties[name] = {**spec, "enum": list(values)}
    return {**schema, "properties": properties}


_SALIENT_IDENTIFIER = re.compile(r"(?<![\w.@/-])(?=[\w.-]*[A-Za-z])(?=[\w.-]*\d)\w[\w.-]{2,}\w(?![\w@/-])")
"""A token of letters and digits together, 4 characters or more: `C01ABCD`, `PROJ-88`, `a1b2c3d`, `api-7d9f`."""
_QUOTED = re.compile(r"`([^`]{2,})`|\"([^\"]{2,})\"|(?<!\w)'([^']{2,})'(?!\w)")
"""A quoted or backticked span: a command, a message, a name the user spelled out (`npm run build`, 'on it')."""


def _quoted(text: str) -> list[str]:
    """The spans `text` quotes or backticks, in order."""
    return [next(group for group in match.groups() if group) for match in _QUOTED.finditer(text)]


_LONG_NUMBER = re.compile(r"(?<![\w.,])\d{4,}(?:\.\d+)?(?![\w,]|\.\d)|(?<![\w.,])\d+\.\d{4,}(?![\w,]|\.\d)")
"""A number of four digits or more, an id or a year (`48213`, `1706.03762`, `2026`); shorter ones are often counts."""
SLUG = re.compile(r"(?<![\w./@~-])[A-Za-z0-9][\w.-]*[A-Za-z0-9]/[A-Za-z0-9][\w.-]*[A-Za-z0-9](?![\w/@-])")
"""Two names joined by a slash, no spaces: an owner and a repository or chart (`octo/app`, `bitnami/redis`)."""


def salient_values(request: str) -> list[str]:
    """The request's most specific values: URLs, e-mail addresses, cell ranges, paths, owner/name slugs,
    identifiers, quoted spans and long numbers (what a tool it is meant for takes as an argument)."""
    urls = _spans(_URL, request)
    emails = _spans(_EMAIL, request)
    rest = _EMAIL.sub(" ", _URL.sub(" ", request))
    ranges = _spans(_CELL_RANGE, rest)
    rest = _CELL_RANGE.sub(" ", rest)
    paths = [path for path in _spans(_PATH, rest) if len(path) > 1]
    slugs = _spans(SLUG, rest)
    identifiers = _spans(_SALIENT_IDENTIFIER, SLUG.sub(" ", _PATH.sub(" ", rest)))
    quoted = _quoted(rest)
    numbers = _spans(_LONG_NUMBER, SLUG.sub(" ", _PATH.sub(" ", rest)))
    return list(dict.fromkeys([*urls, *emails, *ranges, *paths, *slugs, *identifiers, *quoted, *numbers]))


def stated_values(request: str, arguments: Mapping[str, Any], schema: Mapping[str, Any] | None = None) -> int:
    """`grounding`'s evidence over every argument, required or optional: how many of their free values the
    request says, echoes aside. `{"repo_path": "/srv/app", "max_count": 2}` states two for "show the last 2
    commits of /srv/app"; booleans and empty values count for nothing (a request never spells them)."""
    return sum(g.evidence for g in _per_argument(request, schema or {}, arguments).values())


def ignores_request(request: str, arguments: Mapping[str, Any]) -> list[str]:
    """The request's salient values when the arguments use none of them (a tool without parameters, or
    one filled from other words, for "read the file /tmp/hello.txt"); empty when it has none or one is used."""
    salient = salient_values(request)
    written = "\n".join(_strings(arguments)).lower()
    if not salient or any(_used(value.lower(), written) for value in salient):
        return []
    return salient


def unused_values(request: str, arguments: Mapping[str, Any], names: Sequence[str] = ()) -> list[str]:
    """The request's salient values that the arguments leave out, when they use some of them: the tool takes
    the file but not the cells ("what's in sales.xlsx, sheet Q1, cells A1:F30?" as `describe_sheet`), one
    paper id of two, the repository but not the quoted text. `names` (servers, tools) are no values: "context7:
    ..." names the server it asks."""
    salient = [value for value in salient_values(request) if not any(value.lower() in n.lower() for n in names)]
    written = "\n".join(_strings(arguments)).lower()
    used = [value for value in salient if _used(value.lower(), written)]
    return [value for value in salient if value not in used] if used else []


_PIECES = re.compile(r"[^a-z0-9]+|(?<=\d)x(?=\d)")
"""Where a value splits into pieces: at what is not a letter or digit, and at the `x` of a size (`1280x800`)."""


def _used(value: str, written: str) -> bool:
    """Whether the arguments hold `value`: whole, or its pieces apart (a slug's `{"owner": "octo", "repo":
    "app"}`, a size's `{"width": 1280, "height": 800}` for `1280x800`)."""
    if value in written:
        return True
    pieces = [piece for piece in _PIECES.split(value) if len(piece) > 1]
    return bool(pieces) and (bool(SLUG.fullmatch(value)) or len(pieces) > 1) and all(p in written for p in pieces)


def _strings(value: Any) -> list[str]:
    if isinstance(value, Mapping):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return [str(value)] if value is not None else []
