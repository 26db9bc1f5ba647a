"""Benchmark inputs: real tool schemas with a request each, and session history of (at least) a given depth."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.engine import Turn
from nexus_gateway.engine.history import history_tokens
from nexus_gateway.engine.runtime import Runtime
from nexus_gateway.errors import ConfigError
from nexus_gateway.evals import dataset

SHIPPED = Path(__file__).resolve().parent / "data"
"""The default benchmark set, inside the package: 64 Seal-Tools tools (Apache-2.0) with one request each."""


@dataclass(frozen=True)
class BenchCase:
    id: str
    query: str
    record: ToolRecord
    arguments: str
    """The case's expected arguments as JSON (used to write realistic earlier turns)."""


def load_cases(tools: Path, cases: Path, *, count: int, offset: int = 0, exact: bool = True) -> list[BenchCase]:
    """One case per distinct tool, in file order, `count` of them after skipping `offset` tools (up to
    `count`, at least one, when not `exact`)."""
    if not tools.is_file() or not cases.is_file():
        raise ConfigError(f"benchmark data not found: {tools} and {cases} (pass --tools and --cases)")
    records = dataset.tool_records(dataset.load_tools(tools), namespaced=True)
    chosen: list[BenchCase] = []
    seen: set[str] = set()
    for case in dataset.load_cases(cases):
        record = records.get(case.tool)
        if record is None or record.name in seen:
            continue
        seen.add(record.name)
        arguments = {key: values[0] for key, values in (case.arguments or {}).items() if values}
        chosen.append(BenchCase(case.id, case.query, record, json.dumps(arguments)))
    selected = chosen[offset : offset + count]
    if len(selected) < (count if exact else 1):
        raise ConfigError(f"{cases}: only {len(selected)} distinct tools with a case after skipping {offset}")
    return selected


def history(runtime: Runtime, turns: Sequence[BenchCase], depth: int) -> list[int]:
    """Earlier exchanges (other requests and their arguments) as a session holds them, at least `depth`
    tokens of whole turns (`engine.history.history_tokens`): a history cut inside a JSON string
    (`"https://`) made prefill read the tool text as the rest of that string, and the splice-vs-prefill gap
    measured there was that artefact. A policy that trusts a depth measured this way is measured at least
    that deep."""
    return history_tokens(runtime, [Turn(case.query, case.arguments) for case in turns], depth)
