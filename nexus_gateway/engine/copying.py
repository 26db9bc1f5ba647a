"""Copy bias: inside a JSON string value, the tokens that keep the value a span of the request score higher.

Tool arguments are mostly copied from the request (a file name, a city, a quoted message, an id), and a
small model's commonest miss is a value re-worded instead of copied (`"United States"` for `USA`,
`"increase"` for `increase volume`). While a string value is open, each of the best few tokens the model
proposes is checked: when the value with that token is still a span of the request as written (in the
request's JSON spelling, so escapes compare alike), or the token closes the value where a phrase of the
request ends (`phrase_ends`: not inside a word, and not before a word that goes on with the phrase, so
"road cycling" is not cut to `road`), its logit gets `bias` more. The grammar still decides what is
allowed; a value the model is sure of (a date to reformat, an enum) wins over a copy whenever its lead
is above the bias. Keys, numbers and everything outside strings are untouched.
"""

from __future__ import annotations

import json
import re
import weakref

import numpy as np

from nexus_gateway.engine.llama import LlamaModel

_SHORTLIST = 64
_pieces: weakref.WeakKeyDictionary[LlamaModel, dict[int, str]] = weakref.WeakKeyDictionary()


def open_value(text: str) -> str | None:
    """The characters (as written, escapes included) of the JSON string value `text` ends inside; None when
    it ends outside a string or inside a key."""
    field = open_field(text)
    return field[1] if field else None


def open_field(text: str) -> tuple[str, str] | None:
    """(the key it belongs to, the characters so far) of the JSON string value `text` ends inside; None when
    it ends outside a string or inside a key. The key is the last one written (escapes as written)."""
    stack: list[str] = []
    expect_key = in_string = is_key = escaped = False
    start, key = 0, ""
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                if is_key:
                    key = text[start:index]
            continue
        if char == '"':
            in_string, start = True, index + 1
            is_key = expect_key and bool(stack) and stack[-1] == "{"
        elif char in "{[":
            stack.append(char)
            expect_key = char == "{"
        elif char in "}]":
            if stack:
                stack.pop()
            expect_key = False
        elif char == ":":
            expect_key = False
        elif char == ",":
            expect_key = bool(stack) and stack[-1] == "{"
    return (key, text[start:]) if in_string and not is_key else None


class CopyBias:
    """The copy bias for one request (`bias` in logits; 0 turns it off)."""

    def __init__(self, model: LlamaModel, request: str, bias: float) -> None:
        self.model = model
        self.request = json.dumps(request, ensure_ascii=False)[1:-1]
        self.bias = bias
        self._pieces = _pieces.setdefault(model, {})
        self._folded: str | None = None

    def _piece(self, token: int) -> str:
        piece = self._pieces.get(token)
        if piece is None:
            piece = self._pieces[token] = self.model.detokenize([token])
        return piece

    def copies(self, value: str, piece: str, key: str = "") -> bool:
        """Whether `piece` after the open `value` keeps copying the request, or closes a copied phrase where
        the request's phrase ends (`phrase_ends`) for the parameter `key`."""
        if '"' in piece:
            copied = value + piece[: piece.index('"')]
            return bool(copied) and any(
                phrase_ends(self.request, end, copied, key) for end in _ends(self.request, copied)
            )
        grown = value + piece
        return bool(grown.strip()) and not grown[0].isspace() and grown in self.request

    def strays(self, text: str, keys: tuple[str, ...]) -> str | None:
        """The key of `keys` whose open string value `text` ends inside, when that value is no longer a span of
        the request (case aside); else None."""
        field = open_field(text) if keys else None
        if field is None or field[0] not in keys or not field[1].strip():
            return None
        if self._folded is None:
            self._folded = self.request.casefold()
        return field[0] if field[1].casefold() not in self._folded else None

    def apply(self, text: str, logits: np.ndarray) -> np.ndarray:
        """`logits` for the token after `text`, with the copying tokens raised (a copy when any is)."""
        if self.bias == 0:
            return logits
        field = open_field(text)
        if field is None:
            return logits
        key, value = field
        top = np.argpartition(-logits, _SHORTLIST - 1)[:_SHORTLIST]
        raised = [int(token) for token in top if self.copies(value, self._piece(int(token)), key)]
        if not raised:
            return logits
        logits = logits.copy()
        logits[raised] += self.bias
        return logits


_FUNCTION_WORDS = frozenset(
    (  # noqa: SIM905 (a word list reads better as words)
        "a an the this that these those my your our their his her its and or but nor than then if when where while "
        "at in on of for from to with by as into onto over under between during since until using via per about "
        "after before without within including is are was were be been which who whose whom named called titled"
    ).split()
)
"""English words that start a new phrase: a copied value may end before them."""
_WORD = re.compile(r"[A-Za-z0-9]+")
_QUOTES = ("'", '\\"', "\u2019", "\u201d")
"""Closing quotes as the request is held (JSON-escaped: a double quote is `\\"`)."""


def _name_words(key: str) -> set[str]:
    """The words of a parameter name (`slope_geometry`, `reactorType`: slope, geometry; reactor, type)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", key)
    return {word.lower() for word in re.split(r"[^A-Za-z0-9]+", spaced) if word}


def phrase_ends(request: str, end: int, value: str, key: str = "") -> bool:
    """Whether a value copied from `request` up to `end` ends a phrase there, so closing it is a copy: at the
        end of the request or a punctuation mark, or before a word that starts a new phrase (a function word,
        a word of the parameter's own name: `main` before "branch" for `branch_name`), or where a capitalized
        name ends ("Paris today"). Before any other word (`road` in "road cycling", `boiling water` in "boiling
        water reactor") the phrase goes on, and only the tokens that go on with it are raised. Nor does a quoted
    sentence end before its own final mark ("Post 'All green!' to ..."): the mark is copied with it."""
    if end == len(request) or request[end].isalnum():
        return end == len(request)
    if request[end] in ".!?" and request.startswith(_QUOTES, end + 1):
        return False  # a quoted sentence's own final mark: the copy goes on to the quote
    if request[end] != " ":
        return True
    following = _WORD.match(request, end + 1)
    if following is None:
        return True
    word = following.group(0)
    lower = word.lower()
    if lower in _FUNCTION_WORDS or any(lower in (name, name + "s", name + "es") for name in _name_words(key)):
        return True
    last = _WORD.findall(value)
    return bool(last) and last[-1][0].isupper() and word[0].islower()


def _ends(text: str, part: str) -> list[int]:
    """Where each occurrence of `part` in `text` ends."""
    ends, start = [], text.find(part)
    while start != -1:
        ends.append(start + len(part))
        start = text.find(part, start + 1)
    return ends
