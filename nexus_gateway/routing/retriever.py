"""The seam every retriever sits behind."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from nexus_gateway.catalog import ToolRecord


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


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def words_of(identifier: str) -> str:
    """`getCurrentTime`, `get_current_time` and `get-current-time` all read `get current time`."""
    return _CAMEL.sub(" ", identifier).replace("_", " ").replace("-", " ").replace(".", " ").strip()


def index_text(name: str, description: str, schema: Mapping[str, Any] | None, server: str = "") -> str:
    """What a retriever reads of a tool: its name and server in words, its description, and its
    parameters' names and descriptions."""
    parts = [words_of(name), words_of(server), description]
    properties = (schema or {}).get("properties")
    if isinstance(properties, Mapping):
        for param, spec in properties.items():
            parts.append(words_of(param))
            if isinstance(spec, Mapping) and isinstance(spec.get("description"), str):
                parts.append(spec["description"])
    return " ".join(part for part in parts if part)


def tool_text(record: ToolRecord) -> str:
    return index_text(record.upstream_name, record.description, record.input_schema, record.server)
