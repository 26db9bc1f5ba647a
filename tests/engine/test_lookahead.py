"""Drafts come from the request where a value copies it, else from where the last tokens occurred before."""

from __future__ import annotations

from typing import cast

from nexus_gateway.engine.llama import LlamaModel
from nexus_gateway.engine.lookahead import Followers, Lookahead


class Characters:
    """A stand-in tokenizer: one token a character (its code point)."""

    def tokenize(self, text: str) -> list[int]:
        return [ord(char) for char in text]


def lookahead(query: str, prompt: str = "", limit: int = 4) -> Lookahead:
    return Lookahead(cast(LlamaModel, Characters()), query, [ord(char) for char in prompt], limit=limit)


def ids(text: str) -> list[int]:
    return [ord(char) for char in text]


def test_inside_a_value_that_copies_the_request_the_draft_is_what_the_request_says_next():
    ahead = lookahead("email bob@example.com about lunch")
    assert ahead.draft(ids('{"to": "bob@ex'), '{"to": "bob@ex') == ids("ampl")
    assert ahead.draft(ids('{"to": "BOB@EX'), '{"to": "BOB@EX') == ids("ampl")  # case aside
    assert lookahead("a").draft([], '{"to": "a') == []  # the request ends there: nothing after it


def test_a_value_in_json_spelling_is_found_in_the_request_as_json_writes_it():
    ahead = lookahead('say "hi" to Ann')
    assert ahead.draft([], '{"text": "say \\"hi') == ids('\\" t')


def test_outside_a_copied_value_the_tokens_after_the_last_ones_written_earlier_are_the_draft():
    ahead = lookahead("weather in Paris", prompt="get_weather(city: str, unit?: str)")
    assert ahead.draft(ids('{"ci'), '{"ci') == ids("ty: ")  # "ci" in the tool's text
    written = ids('{"city": "Paris", "unit": "c", "')
    assert ahead.draft(written, '{"city": "Paris", "unit": "c", "')[:1] == ids("u")  # `, "` was followed by `u`
    assert lookahead("x", prompt="abc").draft(ids("yz"), "yz") == []  # neither seen before


def test_no_draft_when_the_limit_is_zero():
    ahead = lookahead("weather in Paris", prompt="weather", limit=0)
    assert ahead.draft(ids('{"city": "Par'), '{"city": "Par') == []


def test_what_followed_the_last_tokens_in_earlier_outputs_is_the_draft_where_the_prompt_has_nothing():
    memory = Followers()
    memory.learn(ids('{"a": "x", "b": 1}'))
    ahead = Lookahead(cast(LlamaModel, Characters()), "q", [], limit=4, memory=memory)
    assert ahead.draft(ids('{"zz"'), '{"zz"') == ids(":")  # `"` then `:` in the earlier output
    assert Followers().next(ids("ab")) is None
