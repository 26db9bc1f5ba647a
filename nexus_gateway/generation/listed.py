"""Choices a parameter's description lists in prose: an enum the schema does not declare.

Many servers write a closed set of values into the description of a plain string: "Valid values include:
appointments, companies, contacts, deals, ..." (HubSpot's `objectType`), `Action to perform - "create",
"list", "update", or "delete"` (Google Workspace's `action`), "One of NONE, SUPERSCRIPT, SUBSCRIPT",
`'markdown' (default), 'wiki', 'storage', or 'adf'`. A small model writes `contact` or `dealname` or
`set-out-of-office` there. `described_choices` reads such a list (plain.py gives it to the argument rules as
the parameter's `enum`, so a choice the request names is the one taken: stated.py); examples (`e.g. "Enter",
"Tab"`) and the actions an id parameter is "required for" are no list of choices.
"""

from __future__ import annotations

import re

_ITEM = r"""(?:["'`]?[A-Za-z][\w.-]*["'`]?)"""
_CUED = re.compile(
    r"\b(?:valid|possible|allowed|supported|accepted) values(?: include| are)?|\b(?:must be |can be |is )?one of"
    r"|\boptions(?: are)?\b|\bto perform\b",
    re.IGNORECASE,
)
"""Words that introduce the list of a parameter's values."""
_LIST = re.compile(rf"\s*[:\-\u2013]?\s*({_ITEM}(?:\s*,\s*(?:or |and )?{_ITEM})+|{_ITEM}\s+or\s+{_ITEM})")
_QUOTED = r"""["'`][\w.-]+["'`](?:\s*\([^)]{0,30}\))?"""
_QUOTED_LIST = re.compile(rf"((?:{_QUOTED}\s*,\s*)+(?:or|and)\s+{_QUOTED})")
"""Quoted values joined by commas and a final "or" / "and", each maybe marked `(default)`."""
_EXAMPLE = re.compile(r"(?:e\.g\.|eg\.|for example|such as|examples?|like|required for|used by)[\s,:]*$", re.I)
_SPLIT = re.compile(r"\s*,\s*(?:or |and )?|\s+or\s+")
_ID = re.compile(r"(?:^|_)id$|[a-z]Id$|^id$", re.IGNORECASE)


def described_choices(name: str, description: str) -> list[str] | None:
    """The values the description of string parameter `name` lists as its choices (two or more), or None."""
    if _ID.search(name):
        return None
    for cue in _CUED.finditer(description):
        found = _LIST.match(description, cue.end())
        if found:
            choices = [item.strip("\"'` ").rstrip(".") for item in _SPLIT.split(found.group(1))]
            return _distinct([choice for choice in choices if choice])
    for found in _QUOTED_LIST.finditer(description):
        if not _EXAMPLE.search(description[: found.start()]):
            return _distinct(re.findall(r"""["'`]([\w.-]+)["'`]""", found.group(1)))
    return None


def _distinct(choices: list[str]) -> list[str] | None:
    unique = list(dict.fromkeys(choices))
    return unique if len(unique) >= 2 else None
