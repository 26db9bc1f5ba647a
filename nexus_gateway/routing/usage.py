"""Tools represented by their parts and by how they are used: each tool's passages and example requests
indexed beside its description.

    tool i:  row  description text (its DENSE_FIELDS)            \
             rows passages (its description's lead sentences)     } rows of the SLB, tool by tool
             rows example request 1 .. m                         /
    tool score = its description's cosine blended with its best other row's (`tool_scores`), then fused with
    BM25 as before;
    BM25 reads the other rows with the description (`with_rows`), so a description's lead counts twice.

Example requests are plain data here (`UsageExamples`: by tool content hash), written elsewhere (the
generation layer, by the local model); a tool with none yet has its description row only. The gateway's index
(hybrid.py) and the routing evaluation (evals/routing.py) both lay tools out with `ToolRows`, so an
evaluation measures exactly what the gateway serves.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from nexus_gateway.routing.retriever import ToolFields

UsageExamples = Mapping[str, Sequence[str]]
"""Example requests of tools, by tool content hash."""


@dataclass(frozen=True)
class ToolRows:
    """The rows of the tools' vectors: tool by tool, its description text first, then its other rows
    (`other_rows`: passages, then examples)."""

    texts: list[str]
    owners: np.ndarray
    """The tool (index) of each row."""
    starts: np.ndarray
    """Each tool's first row (its description row)."""

    @classmethod
    def of(cls, descriptions: Sequence[str], others: Sequence[Sequence[str]]) -> ToolRows:
        texts: list[str] = []
        owners: list[int] = []
        starts: list[int] = []
        for tool, (description, requests) in enumerate(zip(descriptions, others, strict=True)):
            starts.append(len(texts))
            texts.append(description)
            texts.extend(requests)
            owners.extend([tool] * (1 + len(requests)))
        return cls(texts, np.asarray(owners, dtype=np.int64), np.asarray(starts, dtype=np.int64))

    @property
    def extra(self) -> int:
        """How many rows there are beyond one a tool."""
        return len(self.texts) - len(self.starts)

    @property
    def per_tool(self) -> int:
        """Rows a tool, on average, rounded up (at least 1)."""
        return max(1, -(-len(self.texts) // max(1, len(self.starts))))

    def best(self, row_scores: np.ndarray) -> np.ndarray:
        """Each tool's score from its rows' (`tool_scores`; one row a tool: the scores as they are)."""
        if len(row_scores) == len(self.starts):
            return row_scores
        return tool_scores(row_scores, self.starts)

    def rows_of(self, tools: np.ndarray) -> np.ndarray:
        """Every row of these tools (in tool order)."""
        ends = np.append(self.starts[1:], len(self.texts))
        return np.concatenate([np.arange(self.starts[t], ends[t]) for t in tools]) if len(tools) else tools


EXAMPLE_WEIGHT = 0.5
"""A tool's dense score is (description + w x best other row) / (1 + w); its description's alone without others.
Measured for examples on the development sets (real-catalog everyday dev and MetaTool, the tools that had
examples, whole pool): the best example alone (w = inf) lost 6 points of top-1 on the real catalog, w = 1 lost 2,
w = 0.5 gained 1 there and 3.3 on MetaTool, and the best recall on both. Passages were then measured at 0.5, 1
and 2 on the four everyday sets: 0.5 had the best mean top-1."""


def tool_scores(row_scores: np.ndarray, starts: np.ndarray, weight: float = EXAMPLE_WEIGHT) -> np.ndarray:
    """Each tool's dense score from its rows' (grouped tool by tool from `starts`, the description's first): the
    description's, blended with its best other row's (`EXAMPLE_WEIGHT`) when it has others."""
    description = row_scores[starts]
    examples = np.asarray(row_scores, dtype=np.float64).copy()
    examples[starts] = -np.inf
    best = np.maximum.reduceat(examples, starts)
    blended: np.ndarray = np.where(np.isfinite(best), (description + weight * best) / (1 + weight), description)
    return blended


def examples_of(digests: Sequence[str], examples: UsageExamples | None) -> list[list[str]]:
    """Each tool's examples (by its content hash), none for a tool without."""
    if not examples:
        return [[] for _ in digests]
    return [list(examples.get(digest, ())) for digest in digests]


def other_rows(fields: ToolFields, examples: Sequence[str]) -> list[str]:
    """A tool's rows beside its description: its passages (`ToolFields.passages`), then its example requests."""
    return [*fields.passages(), *examples]


def with_rows(fields: ToolFields, rows: Sequence[str]) -> ToolFields:
    """A tool's fields with its other rows added to what BM25 reads (its description field)."""
    if not rows:
        return fields
    return dataclasses.replace(fields, description=" ".join([fields.description, *rows]))
