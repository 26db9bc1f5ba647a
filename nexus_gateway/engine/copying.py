"""Copy bias: inside a JSON string value, the tokens that keep the value a span of the request score higher.

Tool arguments are mostly copied from the request (a file name, a city, a quoted message, an id), and a
small model's commonest miss is a value re-worded instead of copied (`"United States"` for `USA`,
`"increase"` for `increase volume`). While a string value is open, each of the best few tokens the model
proposes is checked: when the value with that token is still a span of the request as written (in the
request's JSON spelling, so escapes compare alike), or the token closes the value at the end of a word of
the request, its logit gets `bias` more. The grammar still decides what is allowed; a value the model is
sure of (a date to reformat, an enum) wins over a copy whenever its lead is above the bias. Keys, numbers
and everything outside strings are untouched.
"""

from __future__ import annotations

import json
import weakref

import numpy as np

from nexus_gateway.engine.llama import LlamaModel

_SHORTLIST = 64
_pieces: weakref.WeakKeyDictionary[LlamaModel, dict[int, str]] = weakref.WeakKeyDictionary()


def open_value(text: str) -> str | None:
    """The characters (as written, escapes included) of the JSON string value `text` ends inside; None when
    it ends outside a string or inside a key."""
    stack: list[str] = []
    expect_key = in_string = is_key = escaped = False
    start = 0
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
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
    return text[start:] if in_string and not is_key else None


class CopyBias:
    """The copy bias for one request (`bias` in logits; 0 turns it off)."""

    def __init__(self, model: LlamaModel, request: str, bias: float) -> None:
        self.model = model
        self.request = json.dumps(request, ensure_ascii=False)[1:-1]
        self.bias = bias
        self._pieces = _pieces.setdefault(model, {})

    def _piece(self, token: int) -> str:
        piece = self._pieces.get(token)
        if piece is None:
            piece = self._pieces[token] = self.model.detokenize([token])
        return piece

    def copies(self, value: str, piece: str) -> bool:
        """Whether `piece` after the open `value` keeps copying the request (or closes a copied word)."""
        if '"' in piece:
            copied = value + piece[: piece.index('"')]
            return bool(copied) and any(
                end == len(self.request) or not self.request[end].isalnum() for end in _ends(self.request, copied)
            )
        grown = value + piece
        return bool(grown.strip()) and not grown[0].isspace() and grown in self.request

    def apply(self, text: str, logits: np.ndarray) -> np.ndarray:
        """`logits` for the token after `text`, with the copying tokens raised (a copy when any is)."""
        if self.bias == 0:
            return logits
        value = open_value(text)
        if value is None:
            return logits
        top = np.argpartition(-logits, _SHORTLIST - 1)[:_SHORTLIST]
        raised = [int(token) for token in top if self.copies(value, self._piece(int(token)))]
        if not raised:
            return logits
        logits = logits.copy()
        logits[raised] += self.bias
        return logits


def _ends(text: str, part: str) -> list[int]:
    """Where each occurrence of `part` in `text` ends."""
    ends, start = [], text.find(part)
    while start != -1:
        ends.append(start + len(part))
        start = text.find(part, start + 1)
    return ends
