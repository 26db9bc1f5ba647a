"""Enum choices a request names in other words (paraphrase.py), read with the default embedder; no model."""

import functools

import numpy as np
import pytest

from nexus_gateway.generation.generator import _grounded
from nexus_gateway.generation.paraphrase import ParaphrasedChoices, phrases
from nexus_gateway.routing.embedders import HashingEmbedder, make_embedder

RIDE = {
    "type": "object",
    "properties": {
        "destination": {"type": "string"},
        "mode": {"type": "string", "enum": ["driving", "walking", "bicycling", "transit"]},
        "price_range": {"type": "string", "enum": ["inexpensive", "moderate", "pricey", "ultra high-end"]},
        "airlines": {"type": "string", "enum": ["American Airlines", "Delta Airlines", "United Airlines"]},
    },
    "required": ["destination"],
}


@functools.cache
def _choices() -> ParaphrasedChoices:
    embedder = make_embedder("default")
    return ParaphrasedChoices(lambda: embedder)


def test_a_choice_said_in_other_words_is_read():
    assert _choices().said("How far is it from Lyon to Marseille by car?", RIDE) == {"mode": "driving"}
    assert _choices().said("somewhere cheap to eat in Oakland", RIDE) == {"price_range": "inexpensive"}


def test_no_choice_is_read_where_the_request_makes_none_or_names_one_in_its_words():
    assert _choices().said("book me flights to Denver", RIDE) == {}  # an airline is near "flights", none stands out
    assert _choices().said("directions to the museum, walking", RIDE) == {}  # stated: stated.py's to keep


def test_a_choice_read_is_given_after_decoding_and_not_dropped_as_unstated():
    request = "How far is it from Lyon to Marseille by car?"
    said = _choices().said(request, RIDE)
    arguments, dropped = _grounded(request, RIDE, {"destination": "Marseille", "mode": "transit"}, said)
    assert arguments == {"destination": "Marseille", "mode": "driving"} and dropped == ()
    unsaid, dropped = _grounded(request, RIDE, {"destination": "Marseille", "mode": "transit"})
    assert unsaid == {"destination": "Marseille"} and dropped == ("mode",)


def test_nothing_is_read_with_an_embedder_the_thresholds_were_not_chosen_for_or_none_loaded():
    assert ParaphrasedChoices(lambda: HashingEmbedder()).said("by car", RIDE) == {}
    assert ParaphrasedChoices(lambda: None).said("by car", RIDE) == {}


def test_phrases_are_the_requests_runs_of_one_to_three_words():
    assert phrases("cheapest first please") == [
        "cheapest",
        "first",
        "please",
        "cheapest first",
        "first please",
        "cheapest first please",
    ]


@pytest.mark.parametrize("request_text", ["", "?!"])
def test_a_request_without_words_reads_nothing(request_text):
    vectors = np.eye(3, dtype=np.float32)
    fake = type("Fake", (), {"name": "minilm-fake", "embed_batch": lambda self, texts: vectors[: len(texts)]})()
    assert ParaphrasedChoices(lambda: fake).said(request_text, RIDE) == {}
