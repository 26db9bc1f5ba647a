"""The seam every retriever sits behind."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from nexus_gateway.catalog import ToolRecord


@dataclass(frozen=True)
class Hit:
    name: str
    score: float


class Retriever(Protocol):
    """Ranks catalog tools for a query. `index` is called with the whole catalog after each change."""

    def index(self, records: Sequence[ToolRecord]) -> None: ...

    def search(self, query: str, k: int) -> list[Hit]: ...


def tool_text(record: ToolRecord) -> str:
    """What a retriever reads of a tool: its names, description and parameter names and descriptions."""
    parts = [record.upstream_name.replace("_", " ").replace("-", " "), record.server, record.description]
    properties = record.input_schema.get("properties")
    if isinstance(properties, dict):
        for name, spec in properties.items():
            parts.append(name.replace("_", " "))
            if isinstance(spec, dict) and isinstance(spec.get("description"), str):
                parts.append(spec["description"])
    return " ".join(part for part in parts if part)
