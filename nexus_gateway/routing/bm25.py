"""Okapi BM25 over tool text: the lexical retriever, and the lexical half of hybrid search."""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.routing.retriever import Hit, IndexProgress, tool_text

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


@functools.lru_cache(maxsize=4096)
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

    def __init__(self, *, k1: float = K1, b: float = B) -> None:
        self.k1 = k1
        self.b = b
        self._names: list[str] = []
        self._postings: dict[str, list[tuple[int, int]]] = {}
        self._lengths = np.zeros(0)
        self._idf: dict[str, float] = {}

    def index(self, records: Sequence[ToolRecord], progress: IndexProgress | None = None) -> None:
        self.index_texts([record.name for record in records], [tool_text(record) for record in records])
        if progress is not None:
            progress(len(records), len(records))

    def index_texts(self, names: Sequence[str], texts: Sequence[str]) -> None:
        self._names = list(names)
        self._postings = {}
        lengths = []
        for doc, text in enumerate(texts):
            counts = term_counts(text)
            lengths.append(sum(count for _, count in counts))
            for term, count in counts:
                self._postings.setdefault(term, []).append((doc, count))
        self._lengths = np.asarray(lengths, dtype=np.float64)
        n = len(self._names)
        self._idf = {term: idf(n, len(docs)) for term, docs in self._postings.items()}

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every indexed tool, in index order."""
        scores = np.zeros(len(self._names))
        if not self._names:
            return scores
        average = float(self._lengths.mean()) or 1.0
        for term in set(tokenize(query)):
            postings = self._postings.get(term)
            if not postings:
                continue
            docs = np.fromiter((doc for doc, _ in postings), dtype=np.int64, count=len(postings))
            tf = np.fromiter((count for _, count in postings), dtype=np.float64, count=len(postings))
            scores[docs] += term_scores(tf, self._idf[term], self._lengths[docs], average, self.k1, self.b)
        return scores

    def search(self, query: str, k: int) -> list[Hit]:
        scores = self.scores(query)
        if not len(scores):
            return []
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [Hit(self._names[i], float(scores[i])) for i in top if scores[i] > 0]
