"""Enum choices a request names in other words: "cheap" for `price_range: inexpensive`, "by car" for `mode:
driving`, "biggest first" for `sortBy: size`, "3-D" for `show_type: 3d`.

stated.py reads a choice as stated only when the request holds its words; an optional enum none of whose
choices it holds is left out of the grammar (`stated.unstatable`), so a tool's default applies. That is right
for the choices a request never makes, and wrong for one it makes in its own words. Here the request's short
phrases (one to three words) and each choice are embedded (the routing embedder); a choice is said when its
best phrase is at least `FLOOR` alike and `MARGIN` above every other choice's best phrase. The generator then
keeps that parameter in the grammar and gives it that choice.

Chosen on the development halves of the argument sets (56 optional enums that no choice's words state; 41 of
them with a gold value): at 0.6 / 0.12, 5 choices said, all right, none wrongly (`airlines: American Airlines`
for "flights" is 0.72, but only 0.10 above another airline). The thresholds are the default embedder's
(MiniLM); with another embedder nothing is read here.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from nexus_gateway.generation.stated import choice_stated, request_words

FLOOR = 0.6
MARGIN = 0.12
TUNED_FOR = "minilm"
"""The embedder (by a word of its name) the thresholds were chosen with."""
_PHRASE = re.compile(r"[\w'-]+")
_CACHE_LIMIT = 4096


class TextEmbedder(Protocol):
    name: str

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray: ...


def phrases(request: str) -> list[str]:
    """The request's runs of one to three words."""
    words = _PHRASE.findall(request)
    return [" ".join(words[i : i + n]) for n in (1, 2, 3) for i in range(len(words) - n + 1)]


class ParaphrasedChoices:
    """Which optional enum parameters a request gives a choice of in other words (module docstring)."""

    def __init__(self, embedder: Callable[[], TextEmbedder | None]) -> None:
        """`embedder`: the routing embedder, or None while it is not loaded (then nothing is read)."""
        self._embedder = embedder
        self._vectors: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def said(self, request: str, schema: Mapping[str, Any]) -> dict[str, Any]:
        """The optional scalar enums whose choice the request names only in other words: name -> choice."""
        open_choices = _unstated_enums(request, schema)
        embedder = self._embedder() if open_choices else None
        if embedder is None or TUNED_FOR not in str(getattr(embedder, "name", "")).lower():
            return {}
        spans = phrases(request)
        if not spans:
            return {}
        grams = self._embed(embedder, spans)
        said = {}
        for name, choices in open_choices.items():
            vectors = self._embed(embedder, [_spoken(choice) for choice in choices])
            best = (grams @ vectors.T).max(axis=0)
            order = np.argsort(-best)
            top, runner_up = float(best[order[0]]), float(best[order[1]])
            if top >= FLOOR and top - runner_up >= MARGIN:
                said[name] = choices[int(order[0])]
        return said

    def _embed(self, embedder: TextEmbedder, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of `texts`, each embedded once (a tool's choices come back request after request)."""
        with self._lock:
            missing = [text for text in dict.fromkeys(texts) if text not in self._vectors]
        if missing:
            vectors = np.asarray(embedder.embed_batch(missing), dtype=np.float32)
            vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
            with self._lock:
                if len(self._vectors) + len(missing) > _CACHE_LIMIT:
                    self._vectors.clear()
                self._vectors.update(zip(missing, vectors, strict=True))
        with self._lock:
            return np.stack([self._vectors[text] for text in texts])


def _spoken(choice: Any) -> str:
    """A choice as words: `price_asc` -> "price asc"."""
    return re.sub(r"[_]+", " ", str(choice)).strip()


def _unstated_enums(request: str, schema: Mapping[str, Any]) -> dict[str, list[Any]]:
    """The optional parameters of two or more scalar enum choices, none of which the request states."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return {}
    required = set(schema.get("required") or ())
    words = request_words(request)
    found = {}
    for name, spec in properties.items():
        choices = spec.get("enum") if isinstance(spec, Mapping) else None
        if name in required or not isinstance(choices, list) or len(choices) < 2:
            continue
        if all(isinstance(choice, str) and choice.strip() for choice in choices) and not any(
            choice_stated(choice, request, words) for choice in choices
        ):
            found[name] = list(choices)
    return found
