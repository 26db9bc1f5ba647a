"""The seam every retriever sits behind."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from nexus_gateway.catalog import ToolRecord

if TYPE_CHECKING:
    from nexus_gateway.routing.embedders import Embedder


@dataclass(frozen=True)
class Hit:
    name: str
    score: float


IndexProgress = Callable[[int, int], None]
"""Told `(searchable, total)` while an index is built; it may raise to stop the build (cancellation)."""


class Retriever(Protocol):
    """Ranks catalog tools for a query. `index` is called with the whole catalog after each change; it may
    report progress as it goes, and what it has published so far is searchable meanwhile.

    `tau` is the margin gate: when the first hit's score beats the second's by at least `tau`, the
    choice is automatic (`math.inf`: never).
    """

    tau: float

    def index(self, records: Sequence[ToolRecord], progress: IndexProgress | None = None) -> None: ...

    def search(self, query: str, k: int) -> list[Hit]: ...


@runtime_checkable
class TakesExamples(Protocol):
    """A retriever that indexes tools' example requests beside their descriptions (routing/usage.py)."""

    def use_examples(self, examples: Mapping[str, Sequence[str]]) -> None:
        """Index these example requests (by tool content hash) from the next `index` on."""
        ...


@runtime_checkable
class HasEmbedder(Protocol):
    """A retriever with a text embedder that others may use too (generation/paraphrase.py): None while it is
    not loaded."""

    @property
    def embedder(self) -> Embedder | None: ...


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def words_of(identifier: str) -> str:
    """`getCurrentTime`, `get_current_time` and `get-current-time` all read `get current time`."""
    return _CAMEL.sub(" ", identifier).replace("_", " ").replace("-", " ").replace(".", " ").strip()


@dataclass(frozen=True)
class FieldWeights:
    """How much each field of a tool counts: a tool's name, its description, its parameters (names and
    descriptions) and its server's name. For BM25 a field's terms count `weight` times (BM25F); for the
    embedded text a field of weight 0 is left out."""

    name: float = 1.0
    description: float = 1.0
    parameters: float = 1.0
    server: float = 1.0


PASSAGES = 3
"""Sentences of a description that get rows of their own. With the first sentence led by the name, measured on
the everyday sets over the 843-tool catalog (session 18, `eval routing --sizes 843`): top-1 +2.6 to +9.3 points
on all four, recall@5 +0 to +5; one passage (the led first sentence) gained less, the passages without it lost
on one set."""
MIN_PASSAGE_CHARS = 12
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass(frozen=True)
class ToolFields:
    """What a retriever reads of a tool, field by field, each in words."""

    name: str
    description: str
    parameters: str
    server: str

    @classmethod
    def of(cls, name: str, description: str, schema: Mapping[str, Any] | None, server: str = "") -> ToolFields:
        """The fields of a tool; a name that starts with its server's (`server__tool`, as evaluation sets and
        namespaced catalogs spell it) keeps only the tool's part, so the server counts once, as a server."""
        if server and name.startswith(f"{server}__"):
            name = name[len(server) + 2 :]
        parts = []
        properties = (schema or {}).get("properties")
        if isinstance(properties, Mapping):
            for param, spec in properties.items():
                parts.append(words_of(param))
                if isinstance(spec, Mapping) and isinstance(spec.get("description"), str):
                    parts.append(spec["description"])
        return cls(words_of(name), description, " ".join(part for part in parts if part), words_of(server))

    @classmethod
    def of_record(cls, record: ToolRecord) -> ToolFields:
        return cls.of(record.upstream_name, record.description, record.input_schema, record.server)

    def weighted(self, weights: FieldWeights) -> list[tuple[str, float]]:
        """Each field's text with its weight, fields of weight 0 left out."""
        pairs = [
            (self.name, weights.name),
            (self.server, weights.server),
            (self.description, weights.description),
            (self.parameters, weights.parameters),
        ]
        return [(text, weight) for text, weight in pairs if text and weight > 0]

    def text(self, weights: FieldWeights) -> str:
        """The text that is embedded: the fields of nonzero weight, name first."""
        return " ".join(text for text, _ in self.weighted(weights))

    def passages(self, count: int = PASSAGES) -> list[str]:
        """The description's first `count` sentences, each a row of its own beside the whole text, the first
        also led by the tool's name (usage.ToolRows): one vector of a long description averages everything it
        says (its options, caveats, formats), and a short request matches the sentence that says what the tool
        does better than that average. Fragments (under `MIN_PASSAGE_CHARS`: `Args:`, `- path: x.`) are left out."""
        sentences = [part.strip() for part in _SENTENCE_END.split(self.description)]
        lead = [sentence for sentence in sentences if len(sentence) >= MIN_PASSAGE_CHARS][:count]
        if not lead:
            return []
        return [f"{self.name}: {lead[0]}" if self.name else lead[0], *lead]


DENSE_FIELDS = FieldWeights(server=0.0)
"""Which fields the embedded text holds (a weight of 0 leaves a field out): all but the server's name, chosen
2026-12-03 by `nexus-gateway eval fields` with `bm25.LEXICAL_WEIGHTS` (the server in the text cost top-1)."""


def index_text(name: str, description: str, schema: Mapping[str, Any] | None, server: str = "") -> str:
    """The text a tool is embedded by (`DENSE_FIELDS` of its `ToolFields`)."""
    return ToolFields.of(name, description, schema, server).text(DENSE_FIELDS)


def tool_text(record: ToolRecord) -> str:
    return ToolFields.of_record(record).text(DENSE_FIELDS)
