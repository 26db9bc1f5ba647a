"""Drafts: the tokens a call's arguments will likely go on with, read off the prompt.

Arguments are mostly copied: a value from the request, a key from the tool's text, the JSON between two
values from what was already written. So the next few tokens can often be looked up instead of guessed
(prompt lookup decoding: Saxena 2023; llama.cpp's `lookup` example). `decoding.py` decodes them with the
token it has chosen, in one pass, and keeps each only while it is the very token that greedy decoding
under the grammar picks from the logits before it. On a CPU a pass of two tokens costs about as much as a
pass of one (a step's time goes to reading the weights), so a draft that is wrong costs little, and one
that is right saves a pass. The arguments are those of decoding a token a pass but for rounding:
llama.cpp's products over a batch of tokens round differently from its one-token ones, so where two
tokens are nearly tied the other one can win (6 of 118 argument development cases decoded another text;
exactness on the four argument sets did not change: docs/benchmarks.md, session 21).

Three lookups; the first that finds something is the draft:

- inside a string value that is a span of the request so far (its JSON spelling; case aside), the
  request's text after that span, tokenized;
- the last tokens written (3, then 2) where they occur in the prompt's tokens (tool text and request) or
  earlier in the output, and the tokens that followed them there;
- what followed the last two tokens (then the last one) most often in the earlier calls' outputs
  (`Followers`, one per model: the JSON between keys and values, `": "`, `", "`, is the same every time),
  then the last token in the prompt or the output.
"""

from __future__ import annotations

import json
import weakref
from collections import Counter
from collections.abc import Sequence

from nexus_gateway.engine import DRAFT_TOKENS
from nexus_gateway.engine.copying import open_value
from nexus_gateway.engine.llama import LlamaModel

_CONTINUATION_CHARS = 48
_REMEMBERED = 20_000
"""Contexts `Followers` keeps before it starts again (about 15 MB at most, measured with random tokens)."""


class Followers:
    """The token that most often followed each one or two tokens in the outputs seen so far."""

    def __init__(self) -> None:
        self._after: dict[tuple[int, ...], Counter[int]] = {}

    def learn(self, tokens: Sequence[int]) -> None:
        if len(self._after) > _REMEMBERED:
            self._after.clear()
        for end in range(1, len(tokens)):
            for n in (1, 2):
                if end >= n:
                    self._after.setdefault(tuple(tokens[end - n : end]), Counter())[tokens[end]] += 1

    def next(self, written: Sequence[int]) -> int | None:
        for n in (2, 1):
            if len(written) >= n and (seen := self._after.get(tuple(written[-n:]))):
                return seen.most_common(1)[0][0]
        return None


_followers: weakref.WeakKeyDictionary[LlamaModel, Followers] = weakref.WeakKeyDictionary()


def followers(model: LlamaModel) -> Followers:
    """The `Followers` of `model`'s outputs (one per model, kept as long as it is)."""
    found = _followers.get(model)
    if found is None:
        found = _followers[model] = Followers()
    return found


class Lookahead:
    """Drafts for one call's decoding: `model`'s tokens of the `prompt` (ids) and of the request `query`."""

    def __init__(
        self,
        model: LlamaModel,
        query: str,
        prompt: Sequence[int],
        *,
        limit: int = DRAFT_TOKENS,
        memory: Followers | None = None,
    ) -> None:
        self.model = model
        self.memory = memory or Followers()
        self.limit = limit
        self.prompt = list(prompt)
        self.spelled = json.dumps(query.strip(), ensure_ascii=False)[1:-1]
        """The request as a JSON string value writes it (escapes as written), as `open_value` reads values."""
        self._folded = self.spelled.casefold()

    def draft(self, written: Sequence[int], text: str) -> list[int]:
        """The next tokens after `written` (the output's tokens so far; `text` the JSON so far), at most
        `limit`; empty when nothing is found."""
        if self.limit < 1:
            return []
        value = open_value(text)
        if value:
            found = self._continuation(value)
            if found:
                return self.model.tokenize(found)[: self.limit]
        draft = self._following(written, (3, 2))
        if not draft and (token := self.memory.next(written)) is not None:
            draft = [token]
        return draft or self._following(written, (1,))

    def _continuation(self, value: str) -> str:
        """The request's text after `value`, where `value` is a span of it (the first such place)."""
        at = self.spelled.find(value)
        if at < 0 and len(self.spelled) == len(self._folded):  # casefolding kept the offsets: safe to use them
            at = self._folded.find(value.casefold())
        if at < 0:
            return ""
        start = at + len(value)
        return self.spelled[start : start + _CONTINUATION_CHARS]

    def _following(self, written: Sequence[int], lengths: Sequence[int]) -> list[int]:
        """The tokens after the longest run of `written`'s last tokens (of `lengths`) found in the prompt or
        earlier output."""
        source = [*self.prompt, *written]
        for n in lengths:
            if len(written) < n:
                continue
            tail = list(written[-n:])
            end = len(source) - n  # the tail itself is not a place to look
            for start in range(end - 1, -1, -1):  # the latest place first: the output's own pattern
                if source[start : start + n] == tail:
                    after = source[start + n : start + n + self.limit]
                    if after:
                        return after
        return []
