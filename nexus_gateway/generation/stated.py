"""Values checked against what the request states, after decoding: choices it never made, query values
that carry more than their topic, and paths it gives in pieces.

    unstatable        before decoding: the optional parameters the request can state no value of (below), left
                      out of the grammar
    unstated_choices  optional booleans and enum values the request never mentions (a small model switches
                      `include_images` on, or picks `sort: "date"`, unasked): left out, so the tool's
                      default applies. A choice is stated when a word of it (the value's words for an enum,
                      the parameter name's for a boolean) begins a word of the request (`comedies` states
                      `Comedy`, `outdoor seating` states `has_seating_outdoors`; a one- or two-letter word
                      only as a whole word: `C` is not stated by "cool"), or when it is the default. A list
                      of enum choices none of which the request states is left out too.
    stated_choices    the choice the request does state put in the place of one it does not: the one enum
                      value it names, a wildcard (`dontcare`) when it says any will do, a boolean whose
                      words it states switched on (off after a negation)
    topic_only        a query-like value (`query`, `q`, `topic`, `keywords`, `search...`) without the
                      request's instruction words ("find the latest news about") and without a constraint
                      another argument already carries ("... in the US" when `country` is `US`, "... from
                      the past week" when `time_range` is `week`, "... under $100" when `max_price` is 100,
                      "... since Jan 5th 2026" when `start_date` is `2026-01-05`)
    one_place         one value of the request put into two arguments (`namespace` and `name` both
                      "payments"; `attendees: ["Dentist"]` beside `title: "Dentist"`): it stays where the request
                      puts it (the argument whose name's words come just before it: "in namespace payments"),
                      else in the required one; a list loses the item another argument holds, and the items
                      it repeats; a free string that ends with "to", "in", "on", ... and another argument's
                      whole value loses that tail (`text: "Risks to /home/ana/plan.docx"` beside `filename:
                      "/home/ana/plan.docx"`: `Risks`)
    whole_lists       a list of enum choices the model began with choices the request names, and stopped short:
                      every choice the request names, in the request's order ("in English, French and
                      German": all three where the model wrote `["English"]`)
    day_lists         before decoding: the days of the week a request names as a set ("on weekdays", "every
                      day") for a list of day choices, given after decoding
    directed          "from X to Y": a source-like argument (`origin(s)`, `source`, `from`, `start`) holds X and a
                      destination-like one (`destination(s)`, `target`, `to`, `end`) holds Y, swapped or taken
                      out of each other's lists where the model put both in both
    split_slugs       an `owner/name` slug of the request held whole by `owner` (or `repo`) where the tool takes
                      the two apart: `owner` `octo`, `repo` `app` ("create an issue in octo/app called ...")
    composed_paths    a path-like value that is the folder the request names a folder inside ("the infra folder
                      of /srv/app": `/srv/app/infra`); a path-like value that is a bare file name the request
                      places in a folder it names
                      ("in /srv/img make banner.jpg" -> `/srv/img/banner.jpg`; "as q3.csv in the same
                      folder" as the one file path it names), or that folder alone where the request names
                      one file in it that no other argument holds; and two path-like arguments holding the
                      request's two folders alone, where it names one file ("move report.pdf from /a into
                      /b": `/a/report.pdf`, `/b/report.pdf`)

Each only ever removes words or joins pieces the request holds; none adds a value of its own.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import Any

from nexus_gateway.generation.codes import unit_words
from nexus_gateway.generation.dates import date_spans, read_date
from nexus_gateway.generation.domains import has_domain
from nexus_gateway.generation.durations import said_durations, said_numbers
from nexus_gateway.generation.grounding import SLUG

_STEM = 4
_LONGER = 3
_GENERIC = frozenset(
    (  # noqa: SIM905 (a word list reads better as words)
        "a an the is has have use include includes only enable enabled with without allow allowed show get set "
        "do does all any mode type flag option value should be to of in on for by as"
    ).split()
)
"""Words of a parameter name that say nothing of what it switches (`include_images`: images)."""


def _words(text: str) -> list[str]:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", text)
    return [word.lower() for word in re.split(r"[^A-Za-z0-9]+", spaced) if word]


def _stated(words: list[str], request_words: list[str]) -> bool:
    """A word (cut to its first `_STEM` letters) begins a word of the request, or the other way round; a
    word of one or two letters (`C`, `F`, `3d`) only as a whole word of the request (`C` is not stated by
    "cool")."""
    for word in words:
        if len(word) < 3:
            if word in request_words:
                return True
            continue
        if any(_begins(word, other) for other in request_words):
            return True
    return False


def _mapping(spec: Any, key: str) -> Mapping[str, Any]:
    value = spec.get(key) if isinstance(spec, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def unstated_choices(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[str]:
    """The optional booleans (every word of the name) and enum choices whose values the request does not state
    (the schema's default too: sending it changes nothing, and left out it cannot be a wrong guess)."""
    properties = _mapping(schema, "properties")
    required = set(schema.get("required") or ())
    request_words = _words(request)
    unstated = []
    for name, value in arguments.items():
        spec = properties.get(name)
        if name in required or not isinstance(spec, Mapping):
            continue
        if isinstance(value, bool):  # every word of its name: "search for TODO" does not state `literalSearch`
            words = [word for word in _words(name) if word not in _GENERIC] or _words(name)
            if not all(_stated([word], request_words) for word in words):
                unstated.append(name)
        elif isinstance(spec.get("enum"), list) and isinstance(value, (str, int, float)):
            if value not in spec["enum"] or not choice_stated(value, request, request_words):
                unstated.append(name)  # (a value off a list the description gives is none of its choices)
        elif (
            isinstance(value, list)
            and value
            and isinstance(_mapping(spec, "items").get("enum"), list)
            and not any(choice_stated(item, request, request_words) for item in value)
        ):
            unstated.append(name)  # a list of choices none of which the request names (`repeat: [Mon, ..., Sun]`)
    return unstated


_DIGIT = re.compile(r"\d")
_SHAPED_FORMATS = {"email": "email", "idn-email": "email", "uri": "url", "url": "url", "iri": "url"}


def unstatable(request: str, schema: Mapping[str, Any]) -> list[str]:
    """The optional parameters the request can give no value of, whatever is decoded: a number when it holds
    no digit, a boolean none of whose name's words it states, an enum (or list of enum choices) none of whose
    values it states, a string whose format asks for an e-mail address or a URL when it holds none. Checked
    after decoding, any value of theirs is left out (`unstated_choices`, grounding's `invented_optional`), so
    they are left out of the grammar before it: the tokens a small model spends writing them (`git_log`'s
    `start_timestamp` and `end_timestamp` for "show the last 2 commits": 66 tokens where 13 say it all) are
    not spent, and a tool with nothing left to fill is not decoded at all."""
    properties = _mapping(schema, "properties")
    required = set(schema.get("required") or ())
    request_words = _words(request)
    digits = _DIGIT.search(request) is not None or bool(said_numbers(request) or said_durations(request))
    unfillable = []
    for name, spec in properties.items():
        if name in required or not isinstance(spec, Mapping) or "const" in spec:
            continue
        kind = spec.get("type")
        choices = spec.get("enum")
        if kind == "array":
            choices = _mapping(spec, "items").get("enum")
        if isinstance(choices, list):
            stated = any(choice_stated(choice, request, request_words) for choice in choices)
            if not stated and not (_ANY_CUE.search(request) and any(str(c).lower() in _WILDCARDS for c in choices)):
                unfillable.append(name)
        elif kind in ("integer", "number"):
            if not digits:
                unfillable.append(name)
        elif kind == "boolean":
            words = [word for word in _words(name) if word not in _GENERIC] or _words(name)
            if not _stated(words, request_words):
                unfillable.append(name)
        elif (shape := _SHAPED_FORMATS.get(str(spec.get("format") or ""))) and kind == "string":
            unfillable += [] if _SHAPE_IN_REQUEST[shape].search(request) else [name]
    return unfillable


_FIXED = ("enum", "const", "format", "pattern")


def free_text_optionals(schema: Mapping[str, Any]) -> list[str]:
    """The optional parameters whose values are free text (a string, or a list of strings, of no format, enum
    or pattern, and no domain a request names in other words): a value of theirs the request does not hold is
    left out after decoding (grounding's `invented_optional`), so decoding stops writing one as soon as it
    stops copying the request (`Decoding.copied_only`)."""
    properties = _mapping(schema, "properties")
    required = set(schema.get("required") or ())
    free = []
    for name, spec in properties.items():
        if name in required or not isinstance(spec, Mapping):
            continue
        item = _mapping(spec, "items") if spec.get("type") == "array" else spec
        if item.get("type") == "string" and not any(key in item for key in _FIXED) and not has_domain(name, item):
            free.append(name)
    return free


_SHAPE_IN_REQUEST = {
    "email": re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+"),
    "url": re.compile(r"[a-z][\w+.-]*://\S|(?:[\w-]+\.)+[a-z]{2,}\b", re.IGNORECASE),
}
"""Anything in a request that could be an e-mail address or a URL (a host name included), loosely."""


def request_words(request: str) -> list[str]:
    """The request's words as `choice_stated` compares them (lower case, camel case and `_` split)."""
    return _words(request)


def choice_stated(value: Any, request: str, request_words: list[str]) -> bool:
    """The request names enum value `value`: its words, the value as a phrase, or the unit it abbreviates
    (`C` for "21 degrees celsius")."""
    return isinstance(value, (str, int, float)) and (
        _stated(_words(str(value)) or [str(value).lower()], request_words) or _named_choice(str(value), request)
    )


def _named_choice(value: str, request: str) -> bool:
    """Enum value `value` is in the request as a whole word or phrase, or as the unit it abbreviates."""
    return _named(value, request) or any(_named(word, request) for word in unit_words(value))


def _named(value: str, request: str) -> bool:
    """`value` is in the request as a whole word or phrase (case aside, and a hyphen inside a word: "3-D" says
    `3d`)."""
    value = value.strip()
    pattern = rf"(?<!\w){re.escape(value)}(?!\w)"
    unhyphened = re.sub(r"(?<=\w)-(?=\w)", "", request)
    return bool(value) and any(re.search(pattern, text, re.IGNORECASE) for text in (request, unhyphened))


_WILDCARDS = ("dontcare", "dont_care", "don't care", "any", "all", "either", "no preference")
_ANY_CUE = re.compile(
    r"\b(?:any|anything|whatever|whichever|either|(?:do not|don't|dont) care|doesn't matter|does not matter"
    r"|no preference)\b",
    re.IGNORECASE,
)
_NEGATION = re.compile(
    r"\b(?:no|not|without|never|non|don't|dont|doesn't|do not|does not|exclude|excluding|skip|disable|disabled|off"
    r"|stop|mute)"
    r"\W*(?:\w+\W+){0,2}$",
    re.IGNORECASE,
)


def stated_choices(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` with choices the request states put in the place of those it does not:

    a value off the choices a description lists (listed.py: the grammar does not hold it to them) written as
    the choice it spells otherwise (`contact` -> `contacts`), or as the one choice the request names; an enum
    value the request does not state, where it names exactly one other (non-numeric) value of the
    enum as a whole word (`show_type: "regular"` -> `"imax"` for "IMAX movies"); a required enum value it
    does not state, where the request says any will do ("any restaurant is fine") and the enum has a
    wildcard (`dontcare`, `any`, `all`); a boolean whose words the request states, switched on, or off
    when a negation comes just before them ("with outdoor seating": `has_seating_outdoors: true`;
    "no video": `video: false`)."""
    properties = _mapping(schema, "properties")
    required = set(schema.get("required") or ())
    request_words = _words(request)
    fixed = dict(arguments)
    for name, value in arguments.items():
        spec = properties.get(name)
        if not isinstance(spec, Mapping):
            continue
        choices = spec.get("enum")
        if isinstance(value, bool) and spec.get("type") == "boolean":
            switched = _switch(name, request)
            if switched is not None:
                fixed[name] = switched
        elif isinstance(choices, list) and isinstance(value, str) and value not in choices:  # a described enum
            spelled = [choice for choice in choices if isinstance(choice, str) and _same_word(choice, value)]
            named = [c for c in choices if isinstance(c, str) and not c.strip().isdigit() and _named_choice(c, request)]
            held = {other for key, other in arguments.items() if key != name and isinstance(other, str)}
            if len(spelled) == 1:
                fixed[name] = spelled[0]
            elif len(named) == 1 and named[0] not in held:  # named once, and another parameter has it already
                fixed[name] = named[0]
        elif isinstance(choices, list) and isinstance(value, str) and not choice_stated(value, request, request_words):
            named = [c for c in choices if isinstance(c, str) and not c.strip().isdigit() and _named_choice(c, request)]
            wildcard = [c for c in choices if isinstance(c, str) and c.strip().lower() in _WILDCARDS]
            if len(named) == 1:
                fixed[name] = named[0]
            elif name in required and not named and wildcard and _ANY_CUE.search(request):
                fixed[name] = wildcard[0]
    return fixed


def _same_word(choice: str, value: str) -> bool:
    """`value` is `choice` in another case, number or separator (`contact` for `contacts`, `line items` for
    `line_items`)."""
    a, b = (re.sub(r"[\s_-]+", "_", text.strip().casefold()) for text in (choice, value))
    return a == b or a in (b + "s", b + "es") or b in (a + "s", a + "es")


_WEEK = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_DAY_SETS = (
    (
        re.compile(
            r"\b(?:week ?days|work ?days|working days|business days|every weekday|mon(?:day)?-fri(?:day)?)\b", re.I
        ),
        5,
    ),
    (re.compile(r"\b(?:week ?ends|every weekend)\b", re.I), -2),
    (re.compile(r"\b(?:every ?day|daily|each day|all week)\b", re.I), 7),
)


def day_lists(request: str, schema: Mapping[str, Any]) -> dict[str, list[str]]:
    """The lists of weekdays a request names as a set ("on weekdays": Monday to Friday; "weekends": Saturday
    and Sunday; "every day", "daily": all seven), for the parameters whose items are an enum of the days of the
    week (`Monday` or `Mon`, in the enum's own spelling): name -> days."""
    properties = _mapping(schema, "properties")
    found = {}
    for name, spec in properties.items():
        choices = _mapping(spec, "items").get("enum") if isinstance(spec, Mapping) else None
        if not isinstance(choices, list) or spec.get("type") != "array":
            continue
        spelled = {str(choice).lower()[:3]: choice for choice in choices if isinstance(choice, str)}
        if any(day[:3] not in spelled for day in _WEEK):
            continue
        for pattern, which in _DAY_SETS:
            if pattern.search(request):
                days = _WEEK[:which] if which > 0 else _WEEK[which:]
                found[name] = [spelled[day[:3]] for day in days]
                break
    return found


_NO_CHOICE = frozenset(("none", "all", "any", "default", "auto", "true", "false", "yes", "no", "other", "custom"))


def named_choices(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The optional scalar enums exactly one of whose choices the request names in its words ("close issue
    #1290": `state: closed`; "an animated movie": `genre: Animation`), a choice of four letters or more that
    says something (not `all`, `default`, `none`), where the model wrote none or one the request does not
    state: name -> choice."""
    properties = _mapping(schema, "properties")
    required = set(schema.get("required") or ())
    words = _words(request)
    found = {}
    for name, spec in properties.items():
        choices = spec.get("enum") if isinstance(spec, Mapping) else None
        if name in required or not isinstance(choices, list) or len(choices) < 2:
            continue
        if name in arguments and choice_stated(arguments[name], request, words):
            continue
        named = [choice for choice in choices if isinstance(choice, str) and choice_stated(choice, request, words)]
        if len(named) == 1 and len(named[0]) >= 4 and named[0].lower() not in _NO_CHOICE:
            found[name] = named[0]
    return found


def whole_lists(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, list[str]]:
    """The lists of enum strings the model began with choices the request names only, where the request names
    more of them (as whole words, in the singular or the plural, `_` and `-` read as spaces): every choice it
    names that no other argument holds, in the request's order, up to `maxItems`: name -> choices."""
    properties = _mapping(schema, "properties")
    found = {}
    for name, value in arguments.items():
        spec = properties.get(name)
        if not isinstance(spec, Mapping) or not isinstance(value, list) or not value:
            continue
        if not all(isinstance(item, str) for item in value):  # a list the grammar did not hold to its enum
            continue
        choices = _mapping(spec, "items").get("enum")
        if not isinstance(choices, list):
            continue
        held = {str(other).casefold() for key, other in arguments.items() if key != name and isinstance(other, str)}
        places = {
            choice: _first_place(choice, request)
            for choice in choices
            if isinstance(choice, str) and (choice in value or choice.casefold() not in held)
        }
        named = sorted((place, choice) for choice, place in places.items() if place is not None)
        if any(places.get(item) is None for item in value) or len(named) <= len(value):
            continue
        limit = spec.get("maxItems")
        if isinstance(limit, int) and len(named) > limit:
            continue
        found[name] = [choice for _, choice in named]
    return found


_SEPARATOR = r"\s*,\s*(?:and\s+|or\s+|&\s+)?|\s+(?:and|or|&)\s+"
"""What joins the items of a list a request gives: "Home, Away, Night and Vacation"."""
_LAST_JOIN = re.compile(r"\b(?:and|or)\b|&")
"""What joins a list's last item: after it, nothing is of the list."""


def whole_enumerations(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, list[str]]:
    """The free lists of strings the model copied from a list the request gives, without its first or last items
    ("options Home, Away, Night and Vacation": `["Away", "Night", "Vacation"]`): the request's whole list, its
    items as many words as the model's longest, up to `maxItems`: name -> items."""
    properties = _mapping(schema, "properties")
    found: dict[str, list[str]] = {}
    for name, value in arguments.items():
        spec = properties.get(name)
        if not isinstance(spec, Mapping) or not isinstance(value, list) or len(value) < 2:
            continue
        if not all(isinstance(item, str) and item.strip() for item in value) or _mapping(spec, "items").get("enum"):
            continue
        places = [_place(item, request) for item in value]
        spans = [place for place in places if place is not None]
        if len(spans) < len(places) or spans != sorted(spans):
            continue
        if not all(re.fullmatch(_SEPARATOR, request[a[1] : b[0]]) for a, b in itertools.pairwise(spans)):
            continue  # the items are not one list of the request
        items = _extended(request, spans, max(len(item.split()) for item in value), all(i[0].isupper() for i in value))
        limit = spec.get("maxItems")
        if len(items) > len(value) and not (isinstance(limit, int) and len(items) > limit):
            found[name] = items
    return found


def _place(item: str, request: str) -> tuple[int, int] | None:
    match = re.search(rf"(?<![\w-]){re.escape(item.strip())}(?![\w-])", request)
    return (match.start(), match.end()) if match else None


def _extended(request: str, spans: list[tuple[int, int]], words: int, capitalized: bool) -> list[str]:
    """The items at `spans` with the items of the same list before and after them (each up to `words` words,
    of the same kind as theirs: e-mail addresses, capitalized, lower case), in the request's order. A list ends
    at its "and" / "or" item: nothing after that is of it ("bug and ui, then assign it")."""
    items = [request[start:end] for start, end in spans]
    kind = {_item_kind(item) for item in items}
    before = re.compile(rf"(?:^|\s)((?:\S+\s+){{0,{words - 1}}}\S+?)\s*,\s*$")
    after = re.compile(rf"^(?:{_SEPARATOR})((?:\S+\s+){{0,{words - 1}}}?\S+?)(?=[\s,.;!?]|$)(?!:)")
    begin, end = spans[0][0], spans[-1][1]
    while (joined := before.search(request[:begin])) is not None:
        pieces = joined.group(1).split()
        while capitalized and pieces and not pieces[0][0].isupper():
            pieces.pop(0)
        if not pieces or {_item_kind(" ".join(pieces))} != kind:
            break
        items.insert(0, " ".join(pieces))
        begin = joined.end(1) - len(items[0])
    ended = len(spans) > 1 and _LAST_JOIN.search(request[spans[-2][1] : spans[-1][0]]) is not None
    while not ended and (joined := after.match(request[end:])) is not None and {_item_kind(joined.group(1))} == kind:
        items.append(joined.group(1))
        end += joined.end(1)
        ended = _LAST_JOIN.search(joined.group(0)[: joined.start(1)]) is not None
    return items


def _item_kind(item: str) -> str:
    if "@" in item:
        return "address"
    return "capitalized" if item[:1].isupper() else "lower"


def _first_place(choice: str, request: str) -> int | None:
    """Where the request first names `choice` as whole words (singular or plural, `_` and `-` as spaces)."""
    words = re.sub(r"[\s_-]+", " ", choice.strip()).casefold()
    if len(words) < 2:
        return None
    forms = [words, words + "s", words + "es"]
    if words.endswith("s") and not words.endswith("ss") and len(words) > 4:
        forms.append(words[:-1])
    spelled = "|".join(r"[\s_-]+".join(map(re.escape, form.split(" "))) for form in forms)
    match = re.search(rf"(?<!\w)(?:{spelled})(?!\w)", request, re.IGNORECASE)
    return match.start() if match else None


_NAMED_VALUE = re.compile(
    r"""\s*(?:(?:it|as|named|called)\s+\w|[=:]\s*\S|(?:is\s+)?(?:["'`]|[\w.+-]+@|https?://|[~/.]*/|\d|[A-Z]|#))"""
)
"""What follows a parameter's name when the request gives its value there: a quote, an address, a URL, a
path, a number or a capitalized word, maybe after "it", "as", "named" or a colon."""


def named_parameters(request: str, schema: Mapping[str, Any]) -> list[str]:
    """The optional parameters the request names with their value right after the name ("to hr@x.com, cc
    tom@x.com, subject Sick day", "a slide titled Q3 Roadmap", "label it wontfix"), in the order named. The
    name's words must be the request's, in order (inflected: "titled" names `title`); "reply to the thread"
    names no `to`: no value follows."""
    properties = _mapping(schema, "properties")
    required = set(schema.get("required") or ())
    tokens = list(re.finditer(r"[A-Za-z]+", request))
    found = []
    for name in properties:
        words = _words(name)
        if name in required or not words or any(not word.isalpha() for word in words):
            continue
        for i in range(len(tokens) - len(words) + 1):
            run = tokens[i : i + len(words)]
            named = all(_begins(word, token.group(0).lower()) for word, token in zip(words, run, strict=True))
            if named and _NAMED_VALUE.match(request, run[-1].end()):
                found.append((run[0].start(), name))
                break
    return [name for _, name in sorted(found)]


_QUANTIFIERS = frozenset(("all", "any", "only", "every"))


def switched_on(request: str, schema: Mapping[str, Any]) -> dict[str, bool]:
    """The optional booleans every word of whose name the request states, with no negation before them
    ("add the line ... in italics": `italic: true`; "search recursively": `recursive: true`): name -> True,
    given after decoding whether the model wrote them or not."""
    properties = _mapping(schema, "properties")
    required = set(schema.get("required") or ())
    said = set(_words(request))
    return {
        name: True
        for name, spec in properties.items()
        if name not in required
        and isinstance(spec, Mapping)
        and spec.get("type") == "boolean"
        and _switch(name, request) is True
        and all(word in said for word in _words(name) if word in _QUANTIFIERS)  # "the pods": not `allNamespaces`
    }


_ANY_CASE = re.compile(
    r"\bcase[- ]insensitive(?:ly)?\b|\b(?:ignor(?:e|ing)|regardless of|disregard(?:ing)?) (?:the )?(?:letter )?case\b"
    r"|\b(?:upper|lower)[- ]?(?:or|and|/) ?(?:upper|lower)[- ]?case (?:doesn't|does not|don't|won't) matter\b"
    r"|\bcase (?:doesn't|does not|won't|don't) matter\b|\bin any case\b(?= ?(?:$|[,.;]))",
    re.IGNORECASE,
)
_EXACT_CASE = re.compile(r"\bcase[- ]sensitive(?:ly)?\b|\b(?:match(?:ing)?|exact) (?:the )?case\b", re.IGNORECASE)
_CASE_NAME = re.compile(
    r"^(?:(?P<ignore>ignore)|(?P<match>match)|)_?case_?(?:(?P<sensitive>sensitive)|(?P<insensitive>insensitive)|)$"
)


def case_switches(request: str, schema: Mapping[str, Any]) -> dict[str, bool]:
    """The optional booleans about letter case (`match_case`, `case_sensitive`, `ignoreCase`, ...) set as the
    request says ("upper or lower case doesn't matter": `match_case: false`, `ignore_case: true`; "case-sensitive":
    the other way); none when it says nothing of case."""
    insensitive = bool(_ANY_CASE.search(request))
    if not insensitive and not _EXACT_CASE.search(request):
        return {}
    properties = _mapping(schema, "properties")
    required = set(schema.get("required") or ())
    found: dict[str, bool] = {}
    for name, spec in properties.items():
        if name in required or not isinstance(spec, Mapping) or spec.get("type") != "boolean":
            continue
        form = _CASE_NAME.match("_".join(_words(name)))
        if form is None or not any(form.groupdict().values()):  # `case` alone says nothing of which way
            continue
        ignores = bool(form.group("ignore") or form.group("insensitive"))
        found[name] = insensitive == ignores
    return found


def _switch(name: str, request: str) -> bool | None:
    """True when the request states every word of a boolean's name (`dry_run` needs "dry" as well as
    "run"), False when a negation comes just before them, None when it does not state them all."""
    words = [word for word in _words(name) if word not in _GENERIC] or _words(name)
    tokens = [(match.start(), match.group(0).lower()) for match in re.finditer(r"[A-Za-z0-9]+", request)]
    starts = []
    for word in words:
        found = next((start for start, other in tokens if _begins(word, other)), None)
        if found is None:
            return None
        starts.append(found)
    return _NEGATION.search(request[: min(starts)]) is None if starts else None


def _begins(word: str, other: str) -> bool:
    """`word` and the request's word `other` are one word in two inflections: one begins the other (cut to
    `_STEM` letters) and, unless `word` is a three-letter abbreviation (`Wed` for "Wednesday"), at most
    `_LONGER` letters longer (`comedies` for `comedy`, not `namespace` for `name`); a word of one or two
    letters only as itself."""
    if len(word) < 3:
        return word == other
    if len(word) > 3 and len(other) - len(word) > _LONGER:
        return False
    return other.startswith(word[:_STEM]) or (len(other) >= 3 and word.startswith(other))


_QUERY_NAMES = frozenset(("query", "q", "topic", "keywords", "keyword", "search", "search_query", "search_phrase"))
_LEAD = r"(?:(?:me|all|some|any)\s+)?(?:(?:the|a|an)\s+)?(?:(?:latest|recent|newest|top|best|current)\s+)?"
_NOUN = r"(?:news|articles|posts|papers|results|information|info|stories|updates|repositories|repos|comments)\s+"
_PREPOSITION = r"(?:about|on|for|regarding|mentioning|related\s+to)\s+(?:the\s+)?"
_INSTRUCTION = re.compile(
    r"^(?:(?:please|can you|could you|i want to|i'd like to|help me)\s+)?"
    r"(?:(?:search(?:\s+(?:the\s+web|online|google|duckduckgo))?|find|look\s+(?:up|for)|get|show(?:\s+me)?"
    r"|give\s+me|tell\s+me|fetch|retrieve|list)\s+" + _LEAD + f"(?:{_NOUN})?{_PREPOSITION}"
    r"|(?:search|find|look\s+up)\s+(?=\w)"
    f"|{_LEAD}{_NOUN}{_PREPOSITION})",
    re.IGNORECASE,
)
_CONSTRAINT = (
    r"\s*,?\s+(?:in|from|for|on|at|near|by|within|during|over)\s+(?:the\s+)?(?:(?:past|last|next|this|coming)\s+)?"
    r"{value}\s*$"
)
_BOUND = (
    r"\s*,?\s+(?:under|below|less\s+than|cheaper\s+than|over|above|more\s+than|at\s+least|at\s+most|up\s+to"
    r"|max(?:imum)?|min(?:imum)?)\s+[$\u20ac\u00a3]?\s*{value}(?:\s*(?:dollars|usd|euros|eur|pounds|gbp|bucks))?\s*$"
)
"""A bound another argument already carries ("... under $100" when `max_price` is 100)."""


def _query_like(name: str, spec: Mapping[str, Any]) -> bool:
    return (name.lower() in _QUERY_NAMES or name.lower().endswith("_query")) and spec.get("type") in (None, "string")


def topic_only(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` with each query-like value cut to its topic (see the module's docstring)."""
    properties = _mapping(schema, "properties")
    fixed = dict(arguments)
    for name, value in arguments.items():
        spec = properties.get(name)
        if not isinstance(value, str) or not isinstance(spec, Mapping) or not _query_like(name, spec):
            continue
        topic = _INSTRUCTION.sub("", value.strip(), count=1)
        for other, given in arguments.items():
            if other != name and isinstance(given, str) and len(given.strip()) >= 2:
                topic = re.sub(_CONSTRAINT.format(value=re.escape(given.strip())), "", topic, flags=re.IGNORECASE)
            elif other != name and isinstance(given, (int, float)) and not isinstance(given, bool):
                number = re.escape(str(int(given)) if float(given).is_integer() else str(given))
                topic = re.sub(_BOUND.format(value=number), "", topic, flags=re.IGNORECASE)
        topic = _without_held_date(topic, arguments, name)
        if topic.strip() and topic != value:
            fixed[name] = topic.strip()
    return fixed


_DATE_CUE = re.compile(
    r"(?:\s*,|\s+(?:(?:published|posted|released|written|dated|created)\s+)?(?:since|after|from|before|until|till"
    r"|on|as\s+of)(?:\s+the)?)?\s*$",
    re.IGNORECASE,
)


def _without_held_date(topic: str, arguments: Mapping[str, Any], name: str) -> str:
    """`topic` without a date at its end that another argument holds ("... published since Jan 5th 2026" when
    `start_date` is `2026-01-05`), and the words that lead to it."""
    spans = date_spans(topic)
    if not spans or topic[spans[-1][1] :].strip(" .?!"):
        return topic
    start, _, day = spans[-1]
    others = [value for other, value in arguments.items() if other != name and isinstance(value, str)]
    held = {d for value in others for d in read_date(value)}
    if day not in held:
        return topic
    kept = _DATE_CUE.sub("", topic[:start])
    return kept if kept.strip() else topic


_PATH_NAMES = re.compile(r"(path|file|filename|destination|target|output)", re.IGNORECASE)
_FOLDER = re.compile(r"(?<![\w.])((?:~|/)[\w.\-/~]*[\w\-~])/?(?=[\s,;:'\"]|$)")
_FILE_NAME = re.compile(r"^[\w.\-]+\.[A-Za-z0-9]{1,6}$")


_FILE_WORDS = frozenset({"file", "filename", "filepath", "path"})
"""A parameter whose name ends with one of these holds a file: `filename`, `outputFile`, `path` (and `file_name`,
`file_path`; not `file_id`)."""


def _file_parameter(name: str) -> bool:
    words = _words(name)
    return bool(words) and (words[-1] in _FILE_WORDS or (words[0] == "file" and words[-1] in ("name", "path")))


def composed_paths(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` with a path-like parameter's bare file name joined to the one folder the request names, and a
    file parameter holding words, not a file, given the one file the request names that no argument holds
    ("create report.docx titled Quarterly Review": `filename` is `report.docx`, not the title)."""
    properties = _mapping(schema, "properties")
    fixed = dict(arguments)
    below = {
        parent.rstrip("/"): f"{parent.rstrip('/')}/{child}"
        for child, parent in _SUBFOLDER.findall(request)
        if child.lower() not in _NO_FOLDER_NAME
    }
    for name, value in arguments.items():
        spec = properties.get(name)
        if not isinstance(value, str) or not isinstance(spec, Mapping) or spec.get("type") not in (None, "string"):
            continue
        if len(below) == 1 and value.rstrip("/") in below and _PATH_NAMES.search(name):
            fixed[name] = value = below[value.rstrip("/")]  # "the infra folder of /srv/app": /srv/app/infra
        if value and _file_parameter(name) and not re.search(r"[./\\]", value):
            files = _file_names(request, fixed) + [
                path for path in _FOLDER.findall(request) if _FILE_NAME.match(path.rsplit("/", 1)[-1])
            ]
            if len(set(files)) == 1:
                fixed[name] = files[0]
    paths = [match.group(1) for match in _FOLDER.finditer(request)]
    folders = [folder for folder in paths if not _FILE_NAME.match(folder.rsplit("/", 1)[-1])]
    if not folders and _SAME_FOLDER.search(request) and len(set(paths)) == 1:
        folders = [paths[0].rsplit("/", 1)[0] or "/"]  # "... as sales.csv in the same folder" as /srv/q3.xlsx
        # and "rename /srv/q3.xlsx to q3-final.xlsx": a file renamed stays where it is
    elif len(set(folders)) == 2:
        return _moved_file(request, properties, fixed, list(dict.fromkeys(folders)))
    if len(set(folders)) != 1:
        return fixed
    folder = folders[0]
    for name, value in arguments.items():
        spec = properties.get(name)
        if not isinstance(value, str) or not isinstance(spec, Mapping) or spec.get("type") not in (None, "string"):
            continue
        described = f"{name} {spec.get('description') or ''}"
        if not _PATH_NAMES.search(described):
            continue
        if _FILE_NAME.match(value) and value in request:
            fixed[name] = f"{folder.rstrip('/')}/{value}"
        elif value.rstrip("/") == folder.rstrip("/"):  # the folder alone, where the request names one file in it
            files = _file_names(request, arguments)
            if len(files) == 1:
                fixed[name] = f"{folder.rstrip('/')}/{files[0]}"
    return fixed


_SUBFOLDER = re.compile(
    r"\b([\w.-]+)\s+(?:sub)?(?:folder|directory|dir)\s+(?:of|in|under|inside|within)\s+((?:~|/)[\w.\-/~]*[\w\-~/])",
    re.IGNORECASE,
)
"""A folder named inside another the request gives as a path: "the infra folder of /home/ana/platform"."""
_NO_FOLDER_NAME = frozenset(
    {"same", "this", "that", "whole", "entire", "root", "parent", "current", "new", "other", "the"}
)

_SAME_FOLDER = re.compile(
    r"\b(?:(?:in|into|to)\s+the\s+same\s+(?:folder|directory|dir|place)|next\s+to\s+it|^\s*(?:please\s+)?rename)\b",
    re.I,
)


_FIRST_LAST = re.compile(
    r"\bfirst name(?: is|:)?\s+([A-Z][\w'-]+)\b.{0,40}?\b(?:last|family|sur) ?name(?: is|:)?\s+([A-Z][\w'-]+)",
    re.IGNORECASE | re.DOTALL,
)
_PART_OF_NAME = frozenset(("first", "last", "given", "family", "sur", "middle", "user", "file", "nick", "display"))


_OWNER_NAMES = ("owner", "org", "organization")
_REPOSITORY_NAMES = ("repo", "repository", "repo_name", "repository_name")


def split_slugs(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` with the one `owner/name` slug the request gives split between an owner parameter and a
    repository parameter where one of them holds it whole (the tool takes the two apart: `owner` `octo` and
    `repo` `app`, not `owner` `octo/app` and `repo` "Add dark mode")."""
    properties = _mapping(schema, "properties")
    owner = next((name for name in _OWNER_NAMES if name in properties), None)
    repository = next((name for name in _REPOSITORY_NAMES if name in properties and name != owner), None)
    slugs = set(SLUG.findall(request))
    if owner is None or repository is None or len(slugs) != 1:
        return dict(arguments)
    slug = slugs.pop()
    if not any(str(arguments.get(name, "")).strip() == slug for name in (owner, repository)):
        return dict(arguments)
    first, second = slug.split("/")
    return {**arguments, owner: first, repository: second}


def full_names(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` with a person's-name parameter (`full_name`, `recipientName`, at any depth: `guest.full_name`;
    not `first_name`, `username`, `file_name`) that holds one of the names
    the request gives as a first and a last name ("first name Priya, last name Raman") holding both:
    `Priya Raman`."""
    said = _FIRST_LAST.search(request)
    if said is None:
        return dict(arguments)
    first, last = said.group(1), said.group(2)
    whole = f"{first} {last}"

    def fixed(name: str, value: Any) -> Any:
        if isinstance(value, dict):
            return {key: fixed(key, item) for key, item in value.items()}
        words = _words(name)
        whole_name = words[-1:] == ["name"] and not _PART_OF_NAME & set(words)
        if isinstance(value, str) and whole_name and value.strip() in (first, last):
            return whole
        return value

    return {name: fixed(name, value) for name, value in arguments.items()}


def _moved_file(
    request: str, properties: Mapping[str, Any], arguments: dict[str, Any], folders: list[str]
) -> dict[str, Any]:
    """`arguments` with the one file the request names joined to each of its two folders, where two path-like
    arguments hold those folders alone ("move report.pdf from /a into /b": `source` `/a/report.pdf`,
    `destination` `/b/report.pdf`)."""
    files = _file_names(request, arguments)
    holding = {
        name: value.rstrip("/")
        for name, value in arguments.items()
        if isinstance(value, str)
        and value.rstrip("/") in {folder.rstrip("/") for folder in folders}
        and (_role(name) or _PATH_NAMES.search(f"{name} {_mapping(properties, name).get('description') or ''}"))
    }
    if len(files) != 1 or len(set(holding.values())) != 2:
        return arguments
    return {**arguments, **{name: f"{folder}/{files[0]}" for name, folder in holding.items()}}


_BARE_FILE = re.compile(r"(?<![\w./~\\-])[\w-]+(?:\.[\w-]+)*\.[A-Za-z][A-Za-z0-9]{0,5}(?=[\s,;:'\")]|[.!?]?$|[.!?]\s)")


def _file_names(request: str, arguments: Mapping[str, Any]) -> list[str]:
    """The bare file names of the request (`plan.md`, not a path) that no argument holds already."""
    held = " ".join(str(value) for value in arguments.values())
    return list(dict.fromkeys(name for name in _BARE_FILE.findall(request) if name not in held))


def one_place(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` with a free string the model put into two arguments kept in one (see the module's docstring):
    an optional argument that repeats another's value is left out when the request's words place the value
    in the other, or the other is required and the request's words place it in neither; a list item that
    repeats another argument's string, or an earlier item of its own list (a small model that does not stop:
    `["chicken", "rice", "chicken", "rice", "rice", ...]`), is left out of the list (the list too, when
    optional and then empty)."""
    properties = _mapping(schema, "properties")
    required = set(schema.get("required") or ())
    free = {
        name: value.strip().casefold()
        for name, value in arguments.items()
        if isinstance(value, str) and len(value.strip()) > 1 and _free(properties.get(name))
    }
    fixed = _without_others_tails(arguments, properties)
    for name, value in arguments.items():
        if not isinstance(value, list) or not _free(_mapping(properties.get(name) or {}, "items")):
            continue
        others = {held for other, held in free.items() if other != name}
        kept, seen = [], set()
        for item in value:
            key = item.strip().casefold() if isinstance(item, str) else None
            if key is None or (key not in others and key not in seen):
                kept.append(item)
            seen.add(key)
        if len(kept) < len(value) and (kept or name not in required):
            fixed[name] = kept
            if not kept:
                del fixed[name]
    for name, value in free.items():
        if name in required or name not in fixed:
            continue
        twins = [other for other, held in free.items() if other != name and held == value and other in fixed]
        if not twins:
            continue
        placed = {other for other in [name, *twins] if _placed(other, arguments[other], request)}
        if (placed and name not in placed) or (not placed and any(other in required for other in twins)):
            del fixed[name]
    return fixed


_JOINING = r"(?:to|in|into|on|onto|from|at|for|of|under|inside)"


def _without_others_tails(arguments: Mapping[str, Any], properties: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` with each free string cut before a trailing "to X" (`_JOINING`) where X is another
    argument's whole value: the model copied the request on past its own value into another's."""
    fixed = dict(arguments)
    for name, value in arguments.items():
        if not isinstance(value, str) or not _free(properties.get(name)):
            continue
        for other, held in arguments.items():
            if other == name or not isinstance(held, str) or len(held.strip()) < 2:
                continue
            tail = re.search(rf"\s+{_JOINING}\s+{re.escape(held.strip())}\s*$", value, re.IGNORECASE)
            if tail and value[: tail.start()].strip():
                fixed[name] = value[: tail.start()].strip()
                break
    return fixed


def _free(spec: Any) -> bool:
    """A parameter of free text: a string without enum, const, format or pattern."""
    return (
        isinstance(spec, Mapping)
        and spec.get("type") in (None, "string")
        and not any(key in spec for key in ("enum", "const", "format", "pattern"))
    )


def _placed(name: str, value: str, request: str) -> bool:
    """A word of the parameter's name comes within three words before the value in the request ("in namespace
    payments" places `payments` in `namespace`)."""
    words = [word for word in _words(name) if word not in _GENERIC] or _words(name)
    for match in re.finditer(rf"(?<!\w){re.escape(value.strip())}(?!\w)", request, re.IGNORECASE):
        before = _words(request[: match.start()])[-3:]
        if any(_begins(word, other) for word in words for other in before):
            return True
    return False


_SOURCE_WORDS = frozenset({"origin", "origins", "source", "from", "start", "departure", "src"})
_TARGET_WORDS = frozenset({"destination", "destinations", "target", "to", "end", "arrival", "dest", "dst"})
_FROM_TO = re.compile(r"\bfrom\s+(?P<source>.+?)\s+to\s+(?P<target>.+?)(?=$|[?.!,;]|\s+(?:and|by|in|on|at|with|via)\b)")


def directed(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` with "from X to Y" in its places (the module's docstring): only where the request says it
    that way, the tool has one source-like and one destination-like parameter, and X and Y are both among
    their values."""
    properties = _mapping(schema, "properties")
    sources = [name for name in arguments if name in properties and _role(name) == "source"]
    targets = [name for name in arguments if name in properties and _role(name) == "target"]
    match = _FROM_TO.search(request)
    if len(sources) != 1 or len(targets) != 1 or match is None:
        return dict(arguments)
    source, target = sources[0], targets[0]
    said = {match.group("source").strip().casefold(): "source", match.group("target").strip().casefold(): "target"}
    if len(said) < 2:  # "from X to X": the same value both ways, nothing to put in its place
        return dict(arguments)
    values = {source: arguments[source], target: arguments[target]}
    if not all(_strings(value) for value in values.values()):
        return dict(arguments)
    held = {item.strip().casefold() for value in values.values() for item in _items(value)}
    if set(said) - held:
        return dict(arguments)
    fixed = dict(arguments)
    both = [*_items(values[source]), *_items(values[target])]
    for name, role in ((source, "source"), (target, "target")):
        mine = next(item for item in both if said.get(item.strip().casefold()) == role)
        unsaid = [item for item in _items(values[name]) if item.strip().casefold() not in said]
        fixed[name] = [mine, *unsaid] if isinstance(values[name], list) else mine
    return fixed


def _role(name: str) -> str | None:
    words = _words(name)
    if not words:
        return None
    if words[0] in _SOURCE_WORDS or words[-1] in _SOURCE_WORDS:
        return "source"
    if words[0] in _TARGET_WORDS or words[-1] in _TARGET_WORDS:
        return "target"
    return None


def _items(value: Any) -> list[str]:
    return list(value) if isinstance(value, list) else [value]


def _strings(value: Any) -> bool:
    return all(isinstance(item, str) for item in _items(value)) and bool(_items(value))
