"""Facts a request does not give: identifiers the model would have to invent, left for the host to ask.

A small model asked for `symbol` in "how is Siemens stock doing?" writes a plausible ticker; asked for
`channel_id` in "post to the team channel", a plausible id. Such a value is not a reformatting of the
request (a date, a time zone, a currency code) but a fact the request lacks, and a call made with it does
the wrong thing quietly. So a required parameter that names an identifier (an id, key, email, symbol,
ticker, slug, username, account, handle) or whose description says never to assume it, and whose
decoded value the request does not contain (grounding.py), is reported missing: the arguments stay as
decoded (they validate), and `run` answers `proposed` naming what the host should supply.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

_IDENTIFIER = frozenset(
    "id ids uuid identifier key email mail ticker symbol slug username login account handle phone".split()  # noqa: SIM905
)
"""Words of a parameter's name (`channel_id`, `userEmail`, `project_key`) that make it an identifier."""
_DESCRIBED = re.compile(
    r"\b(never (assume|guess|invent)|always ask|ask the user|ticker|stock symbol|(the|an?) (id|identifier)\b)",
    re.IGNORECASE,
)
"""What a description says of a value that only the user can give."""


def _words(name: str) -> list[str]:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return [word.lower() for word in re.split(r"[^A-Za-z0-9]+", spaced) if word]


def is_identifier(name: str, spec: Mapping[str, Any]) -> bool:
    """A free string parameter whose value is a fact about the user's world, not the request's wording."""
    if spec.get("type") not in (None, "string") or any(key in spec for key in ("enum", "const", "format")):
        return False
    return bool(set(_words(name)) & _IDENTIFIER) or bool(_DESCRIBED.search(str(spec.get("description") or "")))


def missing_facts(schema: Mapping[str, Any], arguments: Mapping[str, Any], ungrounded: Collection[str]) -> list[str]:
    """The required identifier parameters whose values the request does not contain (`ungrounded`)."""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = set(schema.get("required") or ())
    return [
        name
        for name in arguments
        if name in required
        and name in ungrounded
        and isinstance(arguments[name], str)
        and isinstance(properties.get(name), Mapping)
        and is_identifier(name, properties[name])
    ]
