"""Evaluation sets: `tools.json` (MCP Tool objects) and `cases.jsonl`, and how values are compared. The one
reader of both files (evaluations, benchmarks and `compile --tools` all load them here).

Names are kept exactly as given (sets may use names MCP would not allow). In a case's `arguments`, each
parameter maps to its acceptable values; `""` among them means the parameter may be omitted. Values
compare as numbers when both parse as numbers, else as strings, case-insensitively after trimming. A case's
optional `alternatives` name tools as correct for its query as the gold one (`Case.right`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.errors import ConfigError


@dataclass(frozen=True)
class Case:
    id: str
    query: str
    tool: str
    arguments: dict[str, list[Any]] | None = None
    alternatives: tuple[str, ...] = ()
    """Tools as correct for the query as `tool` (its `arguments` are stated for `tool`)."""

    @property
    def right(self) -> frozenset[str]:
        """Every tool whose choice is right: the gold one and its alternatives."""
        return frozenset((self.tool, *self.alternatives))


def load_tools(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read tools ({exc})") from None
    if not isinstance(data, list) or not all(isinstance(t, dict) and isinstance(t.get("name"), str) for t in data):
        raise ConfigError(f"{path}: expected a JSON array of MCP Tool objects, each with a 'name'")
    return data


def tool_records(tools: Sequence[dict[str, Any]], *, namespaced: bool = False) -> dict[str, ToolRecord]:
    """One record per tool, by name: named exactly as the set names it, or (`namespaced`) `server__tool` for
    a tool that names its `server`, as a gateway would name it."""
    records = {}
    for tool in tools:
        server = str(tool.get("server") or "")
        record = ToolRecord.from_tool(server, tool, name=None if namespaced and server else tool["name"])
        records[record.name] = record
    return records


def load_cases(path: Path, limit: int | None = None) -> list[Case]:
    cases = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read cases ({exc.strerror})") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            alternatives = raw.get("alternatives") or []
            if not isinstance(alternatives, list) or not all(isinstance(name, str) for name in alternatives):
                raise ValueError("'alternatives' must be a list of tool names")
            gold = str(raw["tool"])
            others = tuple(dict.fromkeys(name for name in alternatives if name != gold))
            cases.append(Case(str(raw["id"]), str(raw["query"]), gold, raw.get("arguments"), others))
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{path}:{number}: not a case ({exc})") from None
        if limit is not None and len(cases) >= limit:
            break
    return cases


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def value_matches(acceptable: list[Any], actual: Any) -> bool:
    for expected in acceptable:
        a, b = _as_number(expected), _as_number(actual)
        if a is not None and b is not None:
            if a == b:
                return True
            continue
        if isinstance(actual, dict | list) or isinstance(expected, dict | list):
            if json.dumps(actual, sort_keys=True) == json.dumps(expected, sort_keys=True):
                return True
            continue
        if str(expected).strip().lower() == str(actual).strip().lower():
            return True
    return False


def arguments_match(expected: dict[str, list[Any]], actual: dict[str, Any]) -> bool:
    """Every gold parameter is present with an acceptable value, or absent where `""` allows it."""
    for name, acceptable in expected.items():
        if name not in actual:
            if "" not in acceptable:
                return False
        elif not value_matches(acceptable, actual[name]):
            return False
    return True
