"""`run` end to end on a real catalog: what it did for each everyday request, how often that was right, how long.

    tools.json -> one stub upstream per `server` (bench/catalog_server.py: lists those tools, echoes calls)
               -> Gateway (routed, `run` on) -> `run` for each case -> scored against the case

Each case's answer is one of: `called` (the tool ran), `proposed` (a call handed back for the host to
confirm), `ambiguous` (candidates handed back) or `invalid` (an error result). It is scored:

    right         a right tool (the gold one or one of its `alternatives`) called or proposed with right
                  arguments (DESIGN.md's comparison; for an alternative, only the parameters its schema has),
                  or an honest `proposed`/`ambiguous` whose candidates include a right tool
    wrong_called  a tool that is not right was called (the one outcome `run` must never have)
    right_tool_wrong_arguments, missed (no right tool among what came back), invalid

Latency is each `run`'s wall time in this process (route, re-rank, fill and the echo call; no host
transport), with the per-stage times `run` writes in its trace (`timings_ms`), and the CPU time this
process spent on it (`cpu_ms`: the gateway and the model's thread; the stubs are other processes). On a
shared machine wall time grows with the load and CPU time much less, so both are reported. The model
loads on a first, unmeasured request. The stubs mark every tool read-only, so `run` calls whatever it
is sure of.

The model's blocks (meta/warming.py: every tool's scoring block once the engine starts, a tool's schema
block after its first fill) are compiled before the first case, and, unless `--no-settle`, between cases,
time not counted: the steady state of a gateway that has been up a while (`blocks_s` says how long that
took). The first bench over a catalog compiles every scoring block (about 60 tokens a tool); the state
dir keeps them for the next.

Usage examples (`nexus.usage_examples`) are off unless `--set usage_examples=true`: writing them is
background work that would share the cores with the measured requests. When they are on, the cases
start once every tool has its examples (the steady state a long-running gateway reaches).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from nexus_gateway.config import load_config
from nexus_gateway.evals.dataset import Case, arguments_match, load_tools
from nexus_gateway.gateway import Gateway
from nexus_gateway.meta.tools import MetaTools

STUB = Path(__file__).with_name("catalog_server.py")
"""Standalone (no package imports), so it runs as a file under any interpreter."""
STAGES = ("route", "engine_start", "session", "rerank", "fill", "decide", "call")
WARMUP_REQUEST = "what time is it in Tokyo?"


@dataclass(frozen=True)
class Outcome:
    case: Case
    status: str
    """called, proposed, ambiguous or invalid."""
    tool: str | None
    arguments: dict[str, Any] | None
    candidates: tuple[str, ...]
    verdict: str
    """right, wrong_called, right_tool_wrong_arguments, missed or invalid."""
    seconds: float
    cpu_seconds: float
    timings_ms: dict[str, float]
    routing: str | None
    text: str
    checked: tuple[dict[str, Any], ...] = ()
    """The candidates `run` filled (its trace's `checked`): tool, arguments, grounding."""
    rerank: dict[str, Any] | None = None
    """The re-ranker's evidence when it ran (trace: per-candidate scores, lead, likelihood without a tool), and
    how the chosen tool was filled (its form, placement, tokens decoded, decoding time)."""

    def detail(self) -> dict[str, Any]:
        return {
            "id": self.case.id,
            "query": self.case.query,
            "gold": self.case.tool,
            "alternatives": list(self.case.alternatives),
            "expected": self.case.arguments,
            "status": self.status,
            "tool": self.tool,
            "arguments": self.arguments,
            "candidates": list(self.candidates),
            "verdict": self.verdict,
            "routing": self.routing,
            "ms": round(self.seconds * 1000, 1),
            "cpu_ms": round(self.cpu_seconds * 1000, 1),
            "timings_ms": self.timings_ms,
            "checked": list(self.checked),
            **({"rerank": self.rerank} if self.rerank else {}),
            **({"text": self.text[:300]} if self.status in ("invalid", "proposed") else {}),
        }


def catalog_config(tools_path: Path, folder: Path, state_dir: Path, *, nexus: dict[str, Any] | None = None) -> Path:
    """A gateway config with one stub upstream per server of `tools_path` (tools without a `server` go to
    one stub listing them under their own names), routed, `run` on, state in `state_dir`."""
    tools = load_tools(tools_path)
    servers: dict[str, Any] = {}
    stub = [sys.executable, str(STUB), str(tools_path.resolve())]
    for name in dict.fromkeys(str(tool.get("server") or "") for tool in tools):
        if name:
            servers[name] = {"command": stub[0], "args": [*stub[1:], "--server", name]}
        else:
            servers["catalog"] = {"command": stub[0], "args": stub[1:], "prefix": ""}
    settings = {"mode": "routed", "run": True, "usage_examples": False, "state_dir": str(state_dir), **(nexus or {})}
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "run-catalog.json"
    config.write_text(json.dumps({"mcpServers": servers, "nexus": settings}, indent=1))
    return config


def _right_arguments(case: Case, tool: str, arguments: dict[str, Any], schemas: dict[str, dict[str, Any]]) -> bool:
    expected = case.arguments or {}
    if tool != case.tool:  # an alternative: only the parameters its schema has are compared
        properties = (schemas.get(tool) or {}).get("properties") or {}
        expected = {name: values for name, values in expected.items() if name in properties}
    return arguments_match(expected, arguments)


def score(
    case: Case, structured: dict[str, Any], is_error: bool, schemas: dict[str, dict[str, Any]]
) -> tuple[str, str, str | None, dict[str, Any] | None, tuple[str, ...]]:
    """(verdict, status, tool, arguments, candidates) of one `run` answer."""
    status = str(structured.get("status") or ("invalid" if is_error else "unknown"))
    trace = structured.get("trace") or {}
    call = structured.get("call") or {}
    tool = call.get("name") or trace.get("tool")
    arguments = call.get("arguments") if call else trace.get("arguments")
    candidates = tuple(str(c.get("name")) for c in structured.get("candidates") or [] if isinstance(c, dict))
    if status == "invalid_arguments" or (is_error and status not in ("called",)):
        status = "invalid"
    right = case.right
    if status in ("called", "proposed") and tool in right:
        ok = isinstance(arguments, dict) and _right_arguments(case, str(tool), arguments, schemas)
        if ok:
            return "right", status, tool, arguments, candidates
        if status == "proposed" and candidates:  # a doubtful proposal with its candidates: honest when ...
            return ("right" if right & set(candidates) else "missed"), status, tool, arguments, candidates
        return "right_tool_wrong_arguments", status, tool, arguments, candidates
    if status == "called":
        return "wrong_called", status, tool, arguments, candidates
    if status in ("proposed", "ambiguous") and right & set(candidates):
        return "right", status, tool, arguments, candidates
    if status == "invalid":
        return "invalid", status, tool, arguments, candidates
    return "missed", status, tool, arguments, candidates


async def _ask(meta: MetaTools, case_query: str, client: object) -> tuple[dict[str, Any], bool, str, float, float]:
    started, cpu = time.perf_counter(), time.process_time()
    result = await meta.call_tool("run", {"request": case_query}, client=client)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    if isinstance(result, dict):
        structured, is_error = result.get("structuredContent") or {}, bool(result.get("isError"))
        text = "\n".join(str(b.get("text", "")) for b in result.get("content") or [] if isinstance(b, dict))
    else:
        structured, is_error = result.structured_content or {}, bool(result.is_error)
        text = "\n".join(getattr(block, "text", "") for block in result.content)
    return structured, is_error, text, seconds, cpu_seconds


async def _blocks_settled(meta: MetaTools, timeout: float) -> float:
    """Wait (up to `timeout` s) until the runner compiled what it had to in the background; seconds waited."""
    started = time.perf_counter()
    runner = meta.runner
    with anyio.fail_after(timeout):
        while runner is not None and not runner.warmer.settled:  # noqa: ASYNC110 (no event for "nothing left")
            await anyio.sleep(0.2)
    return time.perf_counter() - started


def _rerank_evidence(trace: dict[str, Any]) -> dict[str, Any] | None:
    if not trace.get("reranked"):
        return None
    keys = ("choice", "lead", "scores", "likelihood_without_tool", "mode", "placement", "tokens", "total_ms")
    return {key: trace[key] for key in keys if key in trace}


def _ms(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(np.asarray(values), q)), 1) if values else None


def summarize(outcomes: list[Outcome]) -> dict[str, Any]:
    n = len(outcomes)
    verdicts = Counter(outcome.verdict for outcome in outcomes)
    statuses = Counter(outcome.status for outcome in outcomes)
    latencies = [outcome.seconds * 1000 for outcome in outcomes]
    cpu = [outcome.cpu_seconds * 1000 for outcome in outcomes]
    stages: dict[str, Any] = {}
    for stage in STAGES:
        values = [outcome.timings_ms.get(stage, 0.0) for outcome in outcomes]
        if any(values):
            stages[stage] = {"p50": _ms(values, 50), "p95": _ms(values, 95), "mean": round(statistics.fmean(values), 1)}
    total_mean = statistics.fmean(latencies) if latencies else 0.0
    ratios = {stage: round(stats["mean"] / total_mean, 3) for stage, stats in stages.items()} if total_mean else {}

    def rate(count: int) -> float:
        return round(count / n, 4) if n else 0.0

    return {
        "cases": n,
        "right": verdicts["right"],
        "right_rate": rate(verdicts["right"]),
        "wrong_called": verdicts["wrong_called"],
        "wrong_called_rate": rate(verdicts["wrong_called"]),
        "verdicts": dict(verdicts),
        "statuses": dict(statuses),
        "status_rates": {status: rate(count) for status, count in statuses.items()},
        "latency_ms": {"p50": _ms(latencies, 50), "p95": _ms(latencies, 95), "mean": round(total_mean, 1)},
        "cpu_ms": {"p50": _ms(cpu, 50), "p95": _ms(cpu, 95), "mean": round(statistics.fmean(cpu), 1) if cpu else 0.0},
        "stages_ms": stages,
        "stage_share_of_mean": ratios,
        "routing": dict(Counter(str(outcome.routing) for outcome in outcomes)),
    }


Progress = Callable[[int, int, Outcome], None]


def _examples_pending(status: dict[str, Any]) -> bool:
    """Usage examples still being written (or about to be) for some tool of the catalog."""
    return bool(status.get("writing")) or int(status.get("done", 0)) < int(status.get("total", 0))


async def run_catalog(
    tools_path: Path,
    cases: list[Case],
    *,
    state_dir: Path,
    nexus: dict[str, Any] | None = None,
    progress: Progress | None = None,
    index_timeout: float = 1800.0,
    settle: bool = True,
) -> dict[str, Any]:
    """Start the stubs and the gateway, wait for the whole catalog to be indexed, warm the model up, then
    `run` every case in turn (one client); the summary and every case's detail. `settle`: before each case,
    wait until the blocks compiled in the background are done (meta/warming.py; a host's turn between two
    calls gives it that time), so each case meets the steady state; else the cases meet it as it comes."""
    schemas = {str(t["name"]): t.get("inputSchema") or {} for t in load_tools(tools_path)}
    config = load_config(catalog_config(tools_path, state_dir, state_dir, nexus=nexus))
    started = time.perf_counter()
    async with Gateway(config) as gateway:
        with anyio.fail_after(index_timeout):
            await gateway.wait_ready()
            await gateway.wait_warm()
            # upstreams listing and the index growing are polled (no event tells "all of the catalog")
            while len(gateway.catalog) < len(schemas) or gateway.index_lag() is not None:  # noqa: ASYNC110
                await anyio.sleep(0.5)
            while gateway.examples is not None and _examples_pending(gateway.examples.status()):  # noqa: ASYNC110
                await anyio.sleep(2.0)
        index_s = time.perf_counter() - started
        meta = MetaTools.of(gateway)
        client = object()
        warm = time.perf_counter()
        await _ask(meta, WARMUP_REQUEST, client)
        warmup_s = time.perf_counter() - warm
        blocks_s = await _blocks_settled(meta, index_timeout)
        load_before = os.getloadavg()
        outcomes: list[Outcome] = []
        for number, case in enumerate(cases, start=1):
            if settle:
                blocks_s += await _blocks_settled(meta, index_timeout)
            structured, is_error, text, seconds, cpu_seconds = await _ask(meta, case.query, client)
            verdict, status, tool, arguments, candidates = score(case, structured, is_error, schemas)
            trace = structured.get("trace") or {}
            timings = {str(k): float(v) for k, v in (trace.get("timings_ms") or {}).items()}
            checked = tuple(c for c in trace.get("checked") or [] if isinstance(c, dict))
            outcome = Outcome(
                case,
                status,
                tool,
                arguments,
                candidates,
                verdict,
                seconds,
                cpu_seconds,
                timings,
                trace.get("routing"),
                text,
                checked,
                _rerank_evidence(trace),
            )
            outcomes.append(outcome)
            if progress is not None:
                progress(number, len(cases), outcome)
        load_after = os.getloadavg()
        tools_in_catalog = len(gateway.catalog)
    return {
        "summary": summarize(outcomes),
        "catalog": {"tools_json": str(tools_path), "tools": tools_in_catalog, "servers": len(config.servers)},
        "setup_s": round(index_s, 1),
        "warmup_s": round(warmup_s, 1),
        "blocks_s": round(blocks_s, 1),
        "blocks": meta.runner.warmer.status() if meta.runner is not None else None,
        "settle": settle,
        "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in load_after]},
        "cpu_count": os.cpu_count(),
        "settings": {
            "run_mode": config.nexus.run_mode,
            "rerank_k": config.nexus.rerank_k,
            "search_k": config.nexus.search_k,
            "embedder": config.nexus.embedder,
            "usage_examples": config.nexus.usage_examples,
            "nexus": nexus or {},
        },
        "cases": [outcome.detail() for outcome in outcomes],
    }
