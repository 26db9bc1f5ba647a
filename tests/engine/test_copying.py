"""The copy bias raises the tokens that keep a string value a span of the request, and nothing else."""

from __future__ import annotations

from typing import cast

import numpy as np

from nexus_gateway.engine.copying import CopyBias, open_field, open_value, phrase_ends
from nexus_gateway.engine.llama import LlamaModel


class Vocabulary:
    """A stand-in for the model's vocabulary: token i is `pieces[i]`."""

    def __init__(self, pieces: list[str]) -> None:
        self.pieces = pieces

    def detokenize(self, tokens: list[int]) -> str:
        return "".join(self.pieces[token] for token in tokens)


def test_only_an_open_string_value_is_found_never_a_key_or_a_number():
    assert open_value('{"') is None and open_value('{"city') is None
    assert open_value('{"city": "Par') == "Par"
    assert open_value('{"a": 1, "b') is None
    assert open_value('{"a": ["x", "y') == "y"  # a string in an array is a value
    assert open_value('{"a": {"b": "c') == "c"
    assert open_value('{"a": "say \\"hi') == 'say \\"hi'  # escapes as written
    assert open_value('{"a": "done", ') is None


def test_tokens_that_copy_the_request_are_raised_by_the_bias_and_the_others_are_not():
    pieces = ["USA", "United", " States", '"', 'A"', "Paris", " the", "x"] + [f"t{i}" for i in range(70)]
    bias = CopyBias(cast(LlamaModel, Vocabulary(pieces)), 'Flights to the USA from "Paris"', 2.0)
    logits = np.zeros(len(pieces), dtype=np.float32)
    logits[1] = 1.0  # the model prefers a re-wording, by less than the bias
    raised = bias.apply('{"country": "', logits)
    assert raised[0] == 2.0 and raised[5] == 2.0  # `USA`, `Paris`: spans of the request
    assert raised[1] == 1.0 and raised[6] == 0.0  # `United`, and a value starting with a space, are not
    assert int(np.argmax(raised)) in (0, 5) and logits[0] == 0.0  # the caller's logits are not changed


def test_closing_is_raised_only_at_the_end_of_a_copied_word():
    pieces = ['"', 'A"', "Par"] + [f"t{i}" for i in range(70)]
    bias = CopyBias(cast(LlamaModel, Vocabulary(pieces)), "Flights to the USA from Paris", 2.0)
    assert bias.copies("US", 'A"') and bias.copies("Paris", '"')
    assert not bias.copies("Par", '"')  # mid-word: `Par` is not a value the request holds
    assert not bias.copies("", '"')  # an empty value is not a copy


def test_outside_a_value_or_with_no_bias_the_logits_are_the_models():
    pieces = ["USA", '"'] + [f"t{i}" for i in range(70)]
    logits = np.arange(len(pieces), dtype=np.float32)
    on = CopyBias(cast(LlamaModel, Vocabulary(pieces)), "the USA", 2.0)
    off = CopyBias(cast(LlamaModel, Vocabulary(pieces)), "the USA", 0.0)
    assert on.apply('{"coun', logits) is logits and on.apply('{"n": 1', logits) is logits
    assert off.apply('{"country": "', logits) is logits


def test_a_key_is_known_with_its_open_value():
    assert open_field('{"slope_geometry": "conc') == ("slope_geometry", "conc")
    assert open_field('{"a": "x", "b": ["y", "z') == ("b", "z")
    assert open_field('{"a": 1, "b') is None


def test_closing_a_copied_value_is_raised_where_the_requests_phrase_ends_not_inside_it():
    request = "Burned calories while road cycling at a trail, in the boiling water reactor of Paris today"
    at = request.index
    assert not phrase_ends(request, at(" cycling"), "road", "activity_type")  # the phrase goes on
    assert phrase_ends(request, at(" at a"), "road cycling", "activity_type")  # a function word starts the next
    assert phrase_ends(request, at(", in"), "trail", "location")  # punctuation
    assert not phrase_ends(request, at(" reactor"), "boiling water", "coolant")
    assert phrase_ends(request, at(" reactor"), "boiling water", "reactorType")  # the parameter's own noun follows
    assert phrase_ends(request, at(" today"), "Paris", "city") and phrase_ends(request, len(request), "today", "")
    assert not phrase_ends(request, at("ycling"), "road c", "activity_type")  # inside a word


def test_a_value_cut_before_the_end_of_its_phrase_gets_no_raise_for_closing():
    pieces = ['"', " cycling"] + [f"t{i}" for i in range(70)]
    bias = CopyBias(cast(LlamaModel, Vocabulary(pieces)), "calories burned while road cycling at a trail", 2.0)
    raised = bias.apply('{"activity_type": "road', np.zeros(len(pieces), dtype=np.float32))
    assert raised[0] == 0.0 and raised[1] == 2.0
    assert bias.apply('{"activity_type": "road cycling', np.zeros(len(pieces), dtype=np.float32))[0] == 2.0


def test_a_value_of_the_watched_keys_strays_once_it_is_no_span_of_the_request_case_aside():
    bias = CopyBias(cast(LlamaModel, Vocabulary([])), 'Open an issue titled "Login fails"', 0.0)
    keys = ("body",)
    assert bias.strays('{"title": "Login fails", "body": "login FAI', keys) is None  # a span, case aside
    assert bias.strays('{"title": "Login fails", "body": "Users cannot', keys) == "body"
    assert bias.strays('{"title": "Users cannot', keys) is None  # not a watched key
    assert bias.strays('{"title": "x", "body": "', keys) is None  # nothing written yet
    assert bias.strays('{"body": "Users cannot log in", "', keys) is None  # closed: no open value
