"""Values checked against what the request states, after decoding: choices it never made, query values
that carry more than their topic, and paths it gives in pieces.

    unstated_choices  optional booleans and enum values the request never mentions (a small model switches
                      `include_images` on, or picks `sort: "date"`, unasked): left out, so the tool's
                      default applies. A choice is stated when a word of it (the value's words for an enum,
                      the parameter name's for a boolean) begins a word of the request (`comedies` states
                      `Comedy`, `outdoor seating` states `has_seating_outdoors`), or when it is the default.
    topic_only        a query-like value (`query`, `q`, `topic`, `keywords`, `search...`) without the
                      request's instruction words ("find the latest news about") and without a constraint
                      another argument already carries ("... in the US" when `country` is `US`)
    composed_paths    a path-like value that is a bare file name the request places in a folder it names
                      ("in /srv/img make banner.jpg" -> `/srv/img/banner.jpg`)

Each only ever removes words or joins pieces the request holds; none adds a value of its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_STEM = 4
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
    """A word (cut to its first `_STEM` letters) begins a word of the request, or the other way round."""
    for word in words:
        stem = word[:_STEM]
        if any(other.startswith(stem) or (len(other) >= 3 and word.startswith(other)) for other in request_words):
            return True
    return False


def _mapping(spec: Any, key: str) -> Mapping[str, Any]:
    value = spec.get(key) if isinstance(spec, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def unstated_choices(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[str]:
    """The optional booleans and enum choices whose values the request does not state (and are not the
    schema's default)."""
    properties = _mapping(schema, "properties")
    required = set(schema.get("required") or ())
    request_words = _words(request)
    unstated = []
    for name, value in arguments.items():
        spec = properties.get(name)
        if name in required or not isinstance(spec, Mapping) or value == spec.get("default", object()):
            continue
        if isinstance(value, bool):
            words = [word for word in _words(name) if word not in _GENERIC] or _words(name)
            if not _stated(words, request_words):
                unstated.append(name)
        elif (
            isinstance(spec.get("enum"), list)
            and isinstance(value, (str, int, float))
            and not _stated(_words(str(value)) or [str(value).lower()], request_words)
            and str(value) not in request
        ):
            unstated.append(name)
    return unstated


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
_CONSTRAINT = r"\s*,?\s+(?:in|from|for|on|at|near|by|within)\s+(?:the\s+)?{value}\s*$"


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
        if topic.strip() and topic != value:
            fixed[name] = topic.strip()
    return fixed


_PATH_NAMES = re.compile(r"(path|file|filename|destination|target|output)", re.IGNORECASE)
_FOLDER = re.compile(r"(?<![\w.])((?:~|/)[\w.\-/~]*[\w\-~])/?(?=[\s,;:'\"]|$)")
_FILE_NAME = re.compile(r"^[\w.\-]+\.[A-Za-z0-9]{1,6}$")


def composed_paths(request: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` with a path-like parameter's bare file name joined to the one folder the request names."""
    properties = _mapping(schema, "properties")
    fixed = dict(arguments)
    folders = [match.group(1) for match in _FOLDER.finditer(request)]
    folders = [folder for folder in folders if not _FILE_NAME.match(folder.rsplit("/", 1)[-1])]
    if len(set(folders)) != 1:
        return fixed
    folder = folders[0]
    for name, value in arguments.items():
        spec = properties.get(name)
        if not isinstance(value, str) or not isinstance(spec, Mapping) or spec.get("type") not in (None, "string"):
            continue
        described = f"{name} {spec.get('description') or ''}"
        if _PATH_NAMES.search(described) and _FILE_NAME.match(value) and value in request:
            fixed[name] = f"{folder.rstrip('/')}/{value}"
    return fixed
