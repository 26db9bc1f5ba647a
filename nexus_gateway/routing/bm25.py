"""Okapi BM25 over a tool's fields, each weighted (BM25F): the lexical retriever, and the lexical half of hybrid
search.

A field of weight w counts its terms w times, in the term frequencies and in the document's length (the
simple BM25F of Robertson, Zaragoza and Taylor, 2004: one length normalization over the weighted document).
A server's name is weak evidence (a file named like a server must not pull that server's tools), a tool's
name strong: `LEXICAL_WEIGHTS`.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.routing.query import routing_text
from nexus_gateway.routing.retriever import FieldWeights, Hit, IndexProgress, ToolFields

_TOKEN = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "the",
        "this",
        "to",
        "with",
        "me",
        "my",
        "i",
        "you",
        "your",
        "please",
        "what",
        "which",
        "can",
        "could",
        "would",
        "should",
        "do",
        "does",
        "how",
        "get",
    ]
)


def tokenize(text: str) -> list[str]:
    words = _TOKEN.findall(_CAMEL.sub(" ", text).lower())
    return [_stem(word) for word in words if word not in STOPWORDS]


@functools.lru_cache(maxsize=32768)
def term_counts(text: str) -> tuple[tuple[str, int], ...]:
    """Each term of a tool text with its count; remembered, since a growing index (a cold start publishes one
    after every batch it embeds) indexes the same texts again and again (843 tools: 27 times each)."""
    return tuple(Counter(tokenize(text)).items())


def _stem(word: str) -> str:
    """A light suffix stripper: enough to meet 'events' with 'event' and 'searching' with 'search'."""
    for suffix in ("ing", "ies", "es", "s", "ed"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


K1, B = 1.2, 0.75

LEXICAL_WEIGHTS = FieldWeights(name=2.0, description=1.0, parameters=0.6, server=0.0)
"""BM25F field weights, chosen 2026-12-03 by `nexus-gateway eval fields` (best mean top-1 over Seal-Tools N = 250 and
MetaTool N = 199 among livemcpbench distractors, and the everyday dev set over the whole real catalog; grid in
`evals/fields.py`): the name counts double, parameters 0.6, the server's name not at all."""


def weighted_terms(fields: ToolFields, weights: FieldWeights) -> tuple[dict[str, float], float]:
    """A tool's terms with their weighted frequencies, and its weighted length."""
    terms: dict[str, float] = {}
    length = 0.0
    for text, weight in fields.weighted(weights):
        for term, count in term_counts(text):
            terms[term] = terms.get(term, 0.0) + weight * count
            length += weight * count
    return terms, length


def idf(n_docs: int, df: int) -> float:
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))


def term_scores(
    tf: np.ndarray, idf: float, lengths: np.ndarray, average: float, k1: float = K1, b: float = B
) -> np.ndarray:
    """One query term's BM25 contribution for documents with term frequencies `tf` and these lengths."""
    return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths / average))


class BM25Retriever:
    tau = math.inf
    """Uncalibrated: BM25 scores have no fixed scale, so nothing is routed automatically."""

    def __init__(self, *, k1: float = K1, b: float = B, weights: FieldWeights = LEXICAL_WEIGHTS) -> None:
        self.k1 = k1
        self.b = b
        self.weights = weights
        self._names: list[str] = []
        self._postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._lengths = np.zeros(0)
        self._idf: dict[str, float] = {}

    def index(self, records: Sequence[ToolRecord], progress: IndexProgress | None = None) -> None:
        self.index_fields([record.name for record in records], [ToolFields.of_record(record) for record in records])
        if progress is not None:
            progress(len(records), len(records))

    def index_fields(self, names: Sequence[str], tools: Sequence[ToolFields]) -> None:
        self._names = list(names)
        postings: dict[str, tuple[list[int], list[float]]] = {}
        lengths = []
        for doc, fields in enumerate(tools):
            terms, length = weighted_terms(fields, self.weights)
            lengths.append(length)
            for term, tf in terms.items():
                docs, tfs = postings.setdefault(term, ([], []))
                docs.append(doc)
                tfs.append(tf)
        self._postings = {
            term: (np.asarray(docs, dtype=np.int64), np.asarray(tfs, dtype=np.float64))
            for term, (docs, tfs) in postings.items()
        }
        self._lengths = np.asarray(lengths, dtype=np.float64)
        n = len(self._names)
        self._idf = {term: idf(n, len(docs)) for term, (docs, _) in self._postings.items()}

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every indexed tool, in index order."""
        scores = np.zeros(len(self._names))
        if not self._names:
            return scores
        average = float(self._lengths.mean()) or 1.0
        for term in set(tokenize(query)):
            postings = self._postings.get(term)
            if postings is None:
                continue
            docs, tf = postings
            scores[docs] += term_scores(tf, self._idf[term], self._lengths[docs], average, self.k1, self.b)
        return scores

    def search(self, query: str, k: int) -> list[Hit]:
        scores = self.scores(routing_text(query))
        if not len(scores):
            return []
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [Hit(self._names[i], float(scores[i])) for i in top if scores[i] > 0]
