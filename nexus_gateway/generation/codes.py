"""Codes a parameter asks for by name, and the words a request uses for them.

A tool that takes "the three-letter ISO 4217 code of the currency" wants `EUR`, not `euros`; one that
takes "the ISO 639-1 code of the language" wants `de`, not `German`; one that takes a place as
`'City, ST'` wants `TX`, not `Texas`. The request says the word; the description says the code. These
tables map the common words to their codes (English names, their plurals and a few everyday names:
`bucks`, `quid`), so a value the model copied from the request can be written in the code asked for
(formats.py), and a code counts as said when the request names it in words (grounding.py via
domains.spoken_forms). So does a unit an enum abbreviates (`C` for "celsius": stated.py).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

_CURRENCIES = {
    "USD": "us dollar|us dollars|dollar|dollars|usd|american dollar|american dollars|buck|bucks",
    "EUR": "euro|euros",
    "GBP": "british pound|british pounds|pound|pounds|pound sterling|pounds sterling|sterling|quid",
    "JPY": "japanese yen|yen",
    "CNY": "chinese yuan|yuan|renminbi|rmb",
    "INR": "indian rupee|indian rupees|rupee|rupees",
    "CAD": "canadian dollar|canadian dollars",
    "AUD": "australian dollar|australian dollars",
    "NZD": "new zealand dollar|new zealand dollars",
    "CHF": "swiss franc|swiss francs|franc|francs",
    "SEK": "swedish krona|swedish kronor",
    "NOK": "norwegian krone|norwegian kroner",
    "DKK": "danish krone|danish kroner",
    "PLN": "polish zloty|zloty|zlotys",
    "CZK": "czech koruna|czech korunas",
    "HUF": "hungarian forint|forint|forints",
    "RUB": "russian ruble|russian rubles|ruble|rubles|rouble|roubles",
    "TRY": "turkish lira|lira",
    "BRL": "brazilian real|brazilian reais|real|reais",
    "MXN": "mexican peso|mexican pesos|peso|pesos",
    "ARS": "argentine peso|argentine pesos",
    "KRW": "south korean won|korean won|won",
    "HKD": "hong kong dollar|hong kong dollars",
    "SGD": "singapore dollar|singapore dollars",
    "ZAR": "south african rand|rand",
    "ILS": "israeli shekel|israeli shekels|shekel|shekels",
    "AED": "uae dirham|dirham|dirhams",
    "SAR": "saudi riyal|riyal|riyals",
    "THB": "thai baht|baht",
    "IDR": "indonesian rupiah|rupiah",
    "PHP": "philippine peso|philippine pesos",
    "VND": "vietnamese dong|dong",
    "EGP": "egyptian pound|egyptian pounds",
    "NGN": "nigerian naira|naira",
    "BTC": "bitcoin|bitcoins",
}
_LANGUAGES = {
    "en": "english",
    "es": "spanish|castilian",
    "fr": "french",
    "de": "german",
    "it": "italian",
    "pt": "portuguese",
    "nl": "dutch",
    "sv": "swedish",
    "no": "norwegian",
    "da": "danish",
    "fi": "finnish",
    "pl": "polish",
    "cs": "czech",
    "sk": "slovak",
    "hu": "hungarian",
    "ro": "romanian",
    "bg": "bulgarian",
    "el": "greek",
    "ru": "russian",
    "uk": "ukrainian",
    "tr": "turkish",
    "ar": "arabic",
    "he": "hebrew",
    "fa": "persian|farsi",
    "hi": "hindi",
    "bn": "bengali",
    "ur": "urdu",
    "ta": "tamil",
    "zh": "chinese|mandarin",
    "ja": "japanese",
    "ko": "korean",
    "vi": "vietnamese",
    "th": "thai",
    "id": "indonesian",
    "ms": "malay",
    "tl": "tagalog|filipino",
    "sw": "swahili",
    "ca": "catalan",
    "hr": "croatian",
    "sr": "serbian",
    "sl": "slovenian",
    "lt": "lithuanian",
    "lv": "latvian",
    "et": "estonian",
    "is": "icelandic",
    "ga": "irish",
    "cy": "welsh",
    "la": "latin",
}
_STATES = {
    "AL": "alabama",
    "AK": "alaska",
    "AZ": "arizona",
    "AR": "arkansas",
    "CA": "california",
    "CO": "colorado",
    "CT": "connecticut",
    "DE": "delaware",
    "FL": "florida",
    "GA": "georgia",
    "HI": "hawaii",
    "ID": "idaho",
    "IL": "illinois",
    "IN": "indiana",
    "IA": "iowa",
    "KS": "kansas",
    "KY": "kentucky",
    "LA": "louisiana",
    "ME": "maine",
    "MD": "maryland",
    "MA": "massachusetts",
    "MI": "michigan",
    "MN": "minnesota",
    "MS": "mississippi",
    "MO": "missouri",
    "MT": "montana",
    "NE": "nebraska",
    "NV": "nevada",
    "NH": "new hampshire",
    "NJ": "new jersey",
    "NM": "new mexico",
    "NY": "new york",
    "NC": "north carolina",
    "ND": "north dakota",
    "OH": "ohio",
    "OK": "oklahoma",
    "OR": "oregon",
    "PA": "pennsylvania",
    "RI": "rhode island",
    "SC": "south carolina",
    "SD": "south dakota",
    "TN": "tennessee",
    "TX": "texas",
    "UT": "utah",
    "VT": "vermont",
    "VA": "virginia",
    "WA": "washington",
    "WV": "west virginia",
    "WI": "wisconsin",
    "WY": "wyoming",
    "DC": "district of columbia|washington dc|washington d.c.",
}


_UNITS = {
    "c": "celsius|centigrade|degrees c",
    "f": "fahrenheit|degrees f",
    "k": "kelvin",
    "km": "kilometer|kilometers|kilometre|kilometres",
    "mi": "mile|miles",
    "cm": "centimeter|centimeters|centimetre|centimetres",
    "mm": "millimeter|millimeters|millimetre|millimetres",
    "ft": "foot|feet",
    "kg": "kilogram|kilograms|kilo|kilos",
    "lb": "pound|pounds|lbs",
    "lbs": "pound|pounds|lb",
}
"""Units an enum abbreviates (`"unit": {"enum": ["C", "F"]}`), by the abbreviation, and the words a request
uses for them: only where none means two units (`m` is metres or minutes)."""


def unit_words(value: str) -> tuple[str, ...]:
    """The words a request may use for the unit an enum value abbreviates (`C`: "celsius"), else ()."""
    words = _UNITS.get(value.strip().casefold())
    return tuple(words.split("|")) if words else ()


def _words(table: Mapping[str, str]) -> dict[str, str]:
    """word -> code, from `code: "word|word"` rows."""
    return {word: code for code, words in table.items() for word in words.split("|")}


CURRENCY_WORDS = _words(_CURRENCIES)
LANGUAGE_WORDS = _words(_LANGUAGES)
STATE_WORDS = _words(_STATES)
US_STATES = frozenset(_STATES)

_CURRENCY = re.compile(r"\bcurrenc(?:y|ies)\b|(?:^|_)(?:base|target|from|to)?_?currency|Currency", re.IGNORECASE)
_CODE = re.compile(r"\b(?:codes?|iso ?4217|three-letter|3-letter|symbol)\b", re.IGNORECASE)
_LANGUAGE = re.compile(r"\blang(?:uage)?s?\b|(?:^|_)lang(?:uage)?(?:_|$)|Lang(?:uage)?", re.IGNORECASE)
_LANGUAGE_CODE = re.compile(r"\b(?:iso ?639(?:-1)?|two-letter|2-letter|language codes?|locale codes?)\b", re.IGNORECASE)


def _text(name: str, spec: Mapping[str, Any]) -> str:
    return f"{name.replace('_', ' ')} {spec.get('title') or ''} {spec.get('description') or ''}"


def code_kind(name: str, spec: Mapping[str, Any]) -> str | None:
    """`currency` or `language` when a free string parameter asks for that code by its name or description
    ("the ISO 4217 code", "base currency code (e.g., USD)", "ISO 639-1 code of the language"), else None."""
    if spec.get("type") not in (None, "string") or any(key in spec for key in ("enum", "const", "pattern")):
        return None
    text = _text(name, spec)
    if re.search(r"iso ?4217", text, re.IGNORECASE) or (_CURRENCY.search(text) and _CODE.search(text)):
        return "currency"
    if _LANGUAGE_CODE.search(text) or (_LANGUAGE.search(name) and re.search(r"\bcodes?\b", text, re.IGNORECASE)):
        return "language"
    return None


@functools.cache
def _codes(kind: str) -> dict[str, str]:
    """word -> code for a kind, codes themselves included (`usd` -> `USD`)."""
    words = CURRENCY_WORDS if kind == "currency" else LANGUAGE_WORDS
    table = _CURRENCIES if kind == "currency" else _LANGUAGES
    return {**{code.lower(): code for code in table}, **words}


def code_for(kind: str, value: str) -> str | None:
    """The code of `kind` that `value` names (`euros` -> `EUR`, `German` -> `de`), None when it names none."""
    return _codes(kind).get(" ".join(value.split()).casefold())


def words_for(kind: str, code: str) -> tuple[str, ...]:
    """The words a request may use for `code` (the code itself first)."""
    table = _CURRENCIES if kind == "currency" else _LANGUAGES
    match = next((key for key in table if key.casefold() == code.strip().casefold()), None)
    return () if match is None else (match, *table[match].split("|"))


_COMMA_FORM = re.compile(r"""['"`]([A-Z][\w .()]{0,24}, [\w .()]{1,24})['"`]""")
"""A form quoted in a description with a comma in it: `'City, ST'`, `'City, State (abbr)'`, `'Street, City'`."""
_ABBREVIATED = re.compile(r"\b(?:ST|abbr\w*|[A-Z]{2})\b|\b(?:state|province) codes?\b")


def comma_form(spec: Mapping[str, Any]) -> str | None:
    """The form with a comma a free string parameter's description quotes (`City, ST`), else None."""
    if spec.get("type") not in (None, "string") or any(key in spec for key in ("enum", "const", "pattern")):
        return None
    found = _COMMA_FORM.search(str(spec.get("description") or ""))
    return found.group(1) if found else None


def wants_state_code(spec: Mapping[str, Any]) -> bool:
    """The parameter's comma form ends in a state's two-letter code (`City, ST`, `City, State (abbr)`,
    an example such as `'San Francisco, CA'`)."""
    forms = _COMMA_FORM.findall(str(spec.get("description") or ""))
    return any(_ABBREVIATED.search(form.split(", ", 1)[1]) for form in forms)


def with_state_code(value: str) -> str | None:
    """`Austin, Texas` -> `Austin, TX`; None when the part after the comma is not a US state's name."""
    place, _, state = value.rpartition(",")
    code = STATE_WORDS.get(" ".join(state.split()).casefold()) if place.strip() else None
    return f"{place.strip()}, {code}" if code else None


def state_forms(spec: Mapping[str, Any], value: str) -> tuple[str, ...] | None:
    """How a request may write a `City, ST` value (`Austin, TX`: also "Austin, Texas"), or None when the
    parameter wants no state code or the value ends in none."""
    place, _, state = value.rpartition(",")
    code = state.strip().upper()
    if not wants_state_code(spec) or not place.strip() or code not in US_STATES:
        return None
    return (value, *(f"{place.strip()}, {word}" for word in _STATES[code].split("|")))
