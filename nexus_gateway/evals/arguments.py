"""Argument evaluation: for each case, arguments for the gold tool (or the routed one), compared to the gold.

Without routing the gold tool is given. With routing the gateway's retriever (the default hybrid index
over every tool of the set) picks the top-1 first; a wrong tool counts against `end_to_end`, and one of
the case's `alternatives` is as right as the gold tool. Arguments compare as DESIGN.md says
(`arguments_match`): for an alternative, only the gold parameters its schema has. A parameter the
generator reports `missing` (a fact the request does not give, facts.py) counts as left out: right where
the gold allows it to be omitted. One engine session holds at least `depth` tokens of
earlier turns, kept for every case; each case's tool text, request and arguments are decoded after it and
dropped. The earlier turns are whole turns in the model's prompt layout, as a client session holds them
(`engine.history`), and generic ones: never the set's own requests and arguments, which would hand the
model the answers. The report's `depth` is the number of tokens they took (`depth_requested` the option).
"""

from __future__ import annotations

import functools
import json
import statistics
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.config import ToolForm
from nexus_gateway.engine import DRAFT_TOKENS, Session
from nexus_gateway.engine.backends import open_engine
from nexus_gateway.engine.history import GENERIC_TURNS, history_tokens
from nexus_gateway.engine.runtime import Runtime
from nexus_gateway.engine.settings import EngineSettings
from nexus_gateway.engine.worker import LocalEngine
from nexus_gateway.errors import ConfigError
from nexus_gateway.evals.dataset import Case, arguments_match, tool_records, value_matches
from nexus_gateway.generation.generator import COPY_BIAS, ArgumentGenerator, Generated
from nexus_gateway.generation.paraphrase import ParaphrasedChoices
from nexus_gateway.generation.rerank import Reranker

if TYPE_CHECKING:
    from nexus_gateway.routing.embedders import Embedder

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Outcome:
    case: Case
    routed: str
    generated: Generated
    rerank: dict[str, Any] | None = None
    """The re-ranker's trace, when the routed tool was re-ranked."""
    parameters: frozenset[str] | None = None
    """The routed tool's parameters when it is an alternative (only the gold ones it has are compared)."""

    @property
    def tool_ok(self) -> bool:
        return self.routed in self.case.right

    def _compared(self) -> tuple[dict[str, list[Any]], dict[str, Any]]:
        """The gold arguments to compare (those the routed tool has) and the generated ones, without those
        reported missing."""
        expected = self.case.arguments or {}
        if self.parameters is not None:
            expected = {name: values for name, values in expected.items() if name in self.parameters}
        actual = self.generated.arguments or {}
        return expected, {name: value for name, value in actual.items() if name not in self.generated.missing}

    @property
    def args_ok(self) -> bool:
        expected, actual = self._compared()
        return self.generated.schema_valid and arguments_match(expected, actual)

    def wrong(self) -> list[str]:
        """The gold parameters missing from the arguments, or present with no acceptable value."""
        expected, actual = self._compared()
        return [
            name
            for name, acceptable in expected.items()
            if (name not in actual and "" not in acceptable)
            or (name in actual and not value_matches(acceptable, actual[name]))
        ]

    def detail(self) -> dict[str, Any]:
        """One line of `--details`: the case, what was generated, and the verdict."""
        generated = self.generated
        return {
            "id": self.case.id,
            "request": self.case.query,
            "tool": self.case.tool,
            "routed": self.routed,
            "gold": self.case.arguments,
            "generated": generated.arguments,
            "text": generated.text,
            "verdict": {
                "json_valid": generated.json_valid,
                "schema_valid": generated.schema_valid,
                "tool_ok": self.tool_ok,
                "args_ok": self.args_ok,
                "wrong": self.wrong(),
            },
            "problems": list(generated.problems),
            "dropped": list(generated.dropped),
            "ungrounded": list(generated.ungrounded),
            "missing": list(generated.missing),
            "repaired": list(generated.repaired),
            "grammar": generated.grammar,
            "closed_early": generated.closed_early,
            "rerank": self.rerank,
            "ttft_ms": generated.ttft_ms,
            "total_ms": generated.total_ms,
            "tokens": generated.n_tokens,
            "passes": generated.passes,
        }


def write_details(outcomes: Sequence[Outcome], path: Path) -> None:
    """Every case as one JSON line (`eval arguments --details`), so failures can be read."""
    with path.open("w", encoding="utf-8") as out:
        for outcome in outcomes:
            out.write(json.dumps(outcome.detail(), ensure_ascii=False) + "\n")


Router = Callable[[str], tuple[list[tuple[str, float]], bool]]
"""A request -> the best tools' names and scores (best first), and whether the first clears the margin gate."""


@functools.cache
def _default_embedder() -> Embedder:
    from nexus_gateway.routing.embedders import make_embedder

    return make_embedder("default")


def _router(records: Sequence[ToolRecord], k: int) -> Router:
    from nexus_gateway.routing import gate
    from nexus_gateway.routing.hybrid import build_retriever

    retriever = build_retriever("default", Path(tempfile.mkdtemp(prefix="nexus-eval-")))
    retriever.index(records)

    def route(query: str) -> tuple[list[tuple[str, float]], bool]:
        hits = retriever.search(query, max(k, 2))
        return [(hit.name, hit.score) for hit in hits[:k]], gate.decide([hit.score for hit in hits], retriever.tau)

    return route


def _parameters(record: ToolRecord) -> frozenset[str]:
    properties = record.input_schema.get("properties")
    return frozenset(properties) if isinstance(properties, dict) else frozenset()


def _history(depth: int, session: Session) -> Callable[[Runtime], int]:
    """Generic earlier turns, whole, at least `depth` tokens of them, into `session`; returns their tokens."""

    def append(rt: Runtime) -> int:
        tokens = history_tokens(rt, GENERIC_TURNS, depth)
        rt.append(rt.session(session.id), tokens, logits=False)
        return len(tokens)

    return append


def summarize(outcomes: Sequence[Outcome], *, routed: bool) -> dict[str, Any]:
    n = len(outcomes)

    def share(values: Sequence[bool]) -> float | None:
        return round(sum(values) / len(values), 4) if values else None

    on_gold = [o for o in outcomes if o.tool_ok]
    ttft = [o.generated.ttft_ms for o in outcomes if o.generated.n_tokens]
    return {
        "n_cases": n,
        "json_valid": share([o.generated.json_valid for o in outcomes]),
        "schema_valid": share([o.generated.schema_valid for o in outcomes]),
        "args_exact": share([o.args_ok for o in on_gold]),
        "tool_top1": share([o.tool_ok for o in outcomes]) if routed else None,
        "end_to_end": share([o.tool_ok and o.args_ok for o in outcomes]),
        "ttft_ms_p50": round(statistics.median(ttft), 2) if ttft else None,
        "total_ms_p50": round(statistics.median([o.generated.total_ms for o in outcomes]), 2) if n else None,
    }


async def evaluate_arguments(
    tools: Sequence[dict[str, Any]],
    cases: Sequence[Case],
    settings: EngineSettings,
    *,
    mode: ToolForm = "signature",
    route: bool = False,
    rerank: int = 0,
    depth: int = 0,
    compiled_root: Path | None = None,
    progress: Progress | None = None,
    copy_bias: float | None = None,
    draft_tokens: int | None = None,
    paraphrase: bool = True,
) -> tuple[dict[str, Any], list[Outcome]]:
    records = tool_records(tools)
    unknown = sorted({case.tool for case in cases} - set(records))
    if unknown:
        raise ConfigError(f"{len(unknown)} cases name tools missing from the tool set, e.g. {unknown[:3]}")
    router = _router(list(records.values()), max(rerank, 1)) if route else None
    outcomes: list[Outcome] = []
    rerank_ms: list[float] = []
    if depth and settings.backend != "local":
        raise ConfigError("--depth needs the local engine (its history is decoded token by token)")
    async with open_engine(settings, compiled_root=compiled_root) as engine:
        generator = ArgumentGenerator(
            engine,
            mode=mode,
            copy_bias=COPY_BIAS if copy_bias is None else copy_bias,
            draft_tokens=DRAFT_TOKENS if draft_tokens is None else draft_tokens,
            choices=ParaphrasedChoices(_default_embedder) if paraphrase else None,
        )
        reranker = Reranker(engine, k=rerank) if rerank else None
        session = await engine.open_session()
        history = await engine.run(_history(depth, session)) if depth and isinstance(engine, LocalEngine) else 0
        if mode == "splice":
            await generator.prepare([records[name] for name in dict.fromkeys(case.tool for case in cases)])
        for done, case in enumerate(cases):
            name, trace = case.tool, None
            if router:
                hits, automatic = router(case.query)
                name = hits[0][0] if hits else ""
                if reranker is not None and hits and not automatic:
                    shown = [records[n] for n, _ in hits]
                    reranked = await reranker.rerank(case.query, shown, [score for _, score in hits])
                    rerank_ms.append(reranked.ms)
                    name, trace = reranked.choice or name, reranked.trace()
            record = records.get(name, records[case.tool])
            generated = await generator.generate(session, record, case.query)
            alternative = name != case.tool and name in case.right
            outcomes.append(Outcome(case, name, generated, trace, _parameters(record) if alternative else None))
            if progress:
                progress(done + 1, len(cases))
        model = settings.model or "default"
    report = summarize(outcomes, routed=route)
    report |= {
        "backend": settings.backend,
        "mode": mode,
        "routed": route,
        "depth": history,
        "depth_requested": depth,
        "model": model,
        "generic_grammar": sum(o.generated.grammar != "schema" for o in outcomes),
        "repaired": sum(bool(o.generated.repaired) for o in outcomes),
        "missing": sum(bool(o.generated.missing) for o in outcomes),
        "copy_bias": generator.copy_bias,
        "draft_tokens": generator.draft_tokens,
        "paraphrase": generator.choices is not None,
        "passes": sum(o.generated.passes for o in outcomes),
        "tokens": sum(o.generated.n_tokens for o in outcomes),
        "total_ms_sum": round(sum(o.generated.total_ms for o in outcomes), 1),
    }
    if rerank:
        report |= {"rerank_k": rerank, "reranked": len(rerank_ms)}
        report["rerank_ms_p50"] = round(statistics.median(rerank_ms), 2) if rerank_ms else None
    return report, outcomes


def agreement(first: Sequence[Outcome], second: Sequence[Outcome]) -> dict[str, Any]:
    """How often two runs over the same cases (one engine against another) gave the same arguments: the same
    JSON object, and the same verdict against the gold; the cases that differ, by id."""
    pairs = list(zip(first, second, strict=True))
    if any(a.case.id != b.case.id for a, b in pairs):
        raise ValueError("agreement compares two runs over the same cases, in the same order")
    same = [a.generated.arguments == b.generated.arguments for a, b in pairs]
    verdict = [a.args_ok == b.args_ok for a, b in pairs]
    n = len(pairs)
    return {
        "n_cases": n,
        "same_arguments": round(sum(same) / n, 4) if n else None,
        "same_verdict": round(sum(verdict) / n, 4) if n else None,
        "differ": [a.case.id for (a, _), equal in zip(pairs, same, strict=True) if not equal],
    }
