"""The `run` meta-tool: route the request, generate the arguments, validate, call (or propose) the tool.

    request -> GatewayCore.search -> margin gate -> tool -> ArgumentGenerator (the client's own engine
            session) -> jsonschema -> GatewayCore.call_upstream

Below the margin gate, the best `nexus.rerank_k` tools are re-ranked (generation/rerank.py: the local
model scores how likely the request is after each tool, fused with retrieval's scores); the best is
filled, and taken when its required arguments come from the request (generation/grounding.py) and
validate; if they do not, the next ones in re-ranked order are tried the same way (`FILL_CHECKS` in
all). When no candidate makes the request likelier than no tool, or the request fills none of them, the
candidates come back instead of a guess. The trace says which (`routing`: reranked, grounded or
ambiguous), with every candidate's scores, the choice and its time.

Only tools annotated `readOnlyHint` or listed in `nexus.auto_execute` are called; for the others the
proposed call comes back for the host to confirm with `call_tool`. This module (and with it the engine) is
imported on the first `run` (tools.py), and the engine starts then, so `search_tools` and `call_tool` never
wait for the model.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import time
import weakref
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.config.profiles import EVERYTHING, Profile
from nexus_gateway.engine import Session, Turn
from nexus_gateway.engine.settings import compiled_root, engine_settings
from nexus_gateway.engine.worker import LocalEngine
from nexus_gateway.errors import NexusError
from nexus_gateway.gateway import GatewayCore, SearchResult, ToolResult
from nexus_gateway.generation.generator import ArgumentGenerator, Generated
from nexus_gateway.generation.grounding import Grounding, grounding
from nexus_gateway.generation.rerank import Reranked, Reranker
from nexus_gateway.generation.sessions import SessionPool
from nexus_gateway.routing import gate

logger = logging.getLogger(__name__)

FILL_CHECKS = 3
"""Below the gate, at most this many tools are filled: the model's choice, then the next best ones."""
RESULT_CHARS = 200
"""How much of a result a session keeps in its history."""


def _text(content: list[dict[str, Any]]) -> str:
    return "\n".join(str(block.get("text", "")) for block in content if block.get("type") == "text")


def _result(text: str, structured: dict[str, Any], *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured, is_error=error
    )


@dataclass(frozen=True)
class Candidate:
    result: SearchResult
    record: ToolRecord
    generated: Generated
    grounding: Grounding

    @property
    def fillable(self) -> bool:
        """The arguments validate and no required value had to be invented."""
        return self.generated.schema_valid and self.grounding.invented == 0

    def summary(self) -> dict[str, Any]:
        return {
            "tool": self.record.name,
            "arguments": self.generated.arguments,
            "schema_valid": self.generated.schema_valid,
            "invented": self.grounding.invented,
        }


class Runner:
    def __init__(self, gateway: GatewayCore) -> None:
        self.gateway = gateway
        self.settings = gateway.settings
        self._engine: LocalEngine | None = None
        self._generator: ArgumentGenerator | None = None
        self._pool: SessionPool | None = None
        self._reranker: Reranker | None = None
        self._starting = anyio.Lock()
        self._keys: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        self._numbers = itertools.count(1)

    @property
    def engine_loaded(self) -> bool:
        return self._engine is not None

    async def _start(self) -> tuple[ArgumentGenerator, SessionPool]:
        async with self._starting:
            if self._generator is None or self._pool is None or self._reranker is None:
                settings = engine_settings(self.gateway.config)
                engine = LocalEngine(settings, compiled_root=compiled_root(settings, self.gateway.config))
                await engine.__aenter__()
                self._engine = engine
                room = settings.n_ctx // settings.sessions - 256
                self._pool = SessionPool(engine, settings.sessions, max_depth=max(64, room))
                self._generator = ArgumentGenerator(engine, mode=self.settings.run_mode)
                self._reranker = Reranker(engine, k=self.settings.rerank_k)
            return self._generator, self._pool

    async def rerank(self, query: str, results: list[SearchResult]) -> Reranked:
        """The first `rerank_k` of `results` re-ordered with the local model's evidence (search_tools' `rerank`)."""
        await self._start()
        assert self._reranker is not None
        records = [self.gateway.resolve(result.name) for result in results]
        return await self._reranker.rerank(query, records, [result.score for result in results])

    async def aclose(self) -> None:
        """Close the engine (the gateway has cancelled the background turns first: they are dropped)."""
        if self._engine is not None:
            engine, self._engine, self._generator, self._pool = self._engine, None, None, None
            self._reranker = None
            await engine.__aexit__(None, None, None)

    def _settle_later(self, pool: SessionPool, key: Hashable) -> None:
        """Decode the session's new turn in the background, after the answer has gone out."""
        self.gateway.start_soon(lambda: self._settle(pool, key))

    @staticmethod
    async def _settle(pool: SessionPool, key: Hashable) -> None:
        try:
            await pool.settle(key)
        except Exception as exc:  # boundary: a background task must not take the gateway down
            logger.warning("could not add a turn to an engine session: %s", exc)

    def _key(self, client: object | None) -> Hashable:
        if client is None:
            return 0
        try:
            return self._keys.setdefault(client, next(self._numbers))
        except TypeError:  # not weak-referenceable: keyed by identity
            return ("id", id(client))

    async def run(
        self, arguments: dict[str, Any], client: object | None = None, *, profile: Profile = EVERYTHING
    ) -> ToolResult:
        """Route, fill and call (or propose) among the tools of the client's `profile`."""
        started = time.perf_counter()
        result = await self._run(arguments, client, profile)
        self.gateway.activity.record_run(str(arguments.get("request", "")), result, time.perf_counter() - started)
        return result

    async def _run(self, arguments: dict[str, Any], client: object | None, profile: Profile) -> ToolResult:
        request = str(arguments.get("request", "")).strip()
        if not request:
            raise NexusError("run needs a non-empty 'request': say what to do, with the values it needs.")
        context = str(arguments.get("context") or "").strip()
        query = f"{context}\n{request}" if context else request
        results = await self.gateway.search(
            request,
            max(self.settings.search_k, self.settings.rerank_k),
            allows=None if profile.everything else profile.allows,
        )
        if not results:
            raise NexusError(f"No tool matches {request!r}; try other words, or search_tools.")
        generator, pool = await self._start()
        key = self._key(client)
        margin = gate.margin([result.score for result in results])
        shown = round(margin, 4) if math.isfinite(margin) else None
        trace: dict[str, Any] = {"score": results[0].score, "margin": shown, "routing": "automatic", "reranked": False}
        async with pool.lease(key) as engine_session:
            picked = await self._pick(generator, engine_session, query, results, trace)
            if picked is None:
                return self._candidates(results, trace)
            record, generated = picked.record, picked.generated
            trace |= {"tool": record.name, "score": picked.result.score, **generated.trace()}
            trace |= {"session": engine_session.id, "session_depth": await pool.depth(engine_session)}
            if generated.arguments is None or generated.problems:
                why = "; ".join(generated.problems) or f"the model's output is not a JSON object: {generated.text!r}"
                text = f"Could not fill the arguments of {record.name}: {why}. Use call_tool with your own."
                return _result(text, {"status": "invalid_arguments", "trace": trace}, error=True)
            if not self._may_execute(record, profile):
                return self._proposal(record, generated, trace, asked=profile.auto_execute is False)
            called = await self.gateway.call_upstream(record, generated.arguments)
            upstream = called if isinstance(called, dict) else called.model_dump(by_alias=True, exclude_none=True)
            answer = _text(upstream.get("content") or [])
            turn = Turn(query, json.dumps(generated.arguments), " ".join(answer.split())[:RESULT_CHARS])
            pool.defer(key, turn)  # decoded after the answer has gone out, or before this client's next run
        self._settle_later(pool, key)
        structured = {"status": "called", "trace": trace, "result": upstream.get("structuredContent")}
        return {
            "content": upstream.get("content") or [],
            "structuredContent": structured,
            "isError": bool(upstream.get("isError")),
        }

    async def _pick(
        self,
        generator: ArgumentGenerator,
        session: Session,
        query: str,
        results: list[SearchResult],
        trace: dict[str, Any],
    ) -> Candidate | None:
        """The automatic choice; below the gate, the re-ranked best when the request fills it, else the
        next of the best few (re-ranked order) that it fills, or None (no candidate explains the request,
        or the request fills none of those checked)."""
        if results[0].automatic:
            return await self._fill(generator, session, query, results[0])
        reranked = await self.rerank(query, results)
        trace |= reranked.trace()
        if reranked.choice is None:
            trace["routing"] = "ambiguous"
            return None
        ranked = sorted(range(len(reranked.fused)), key=lambda i: (-reranked.fused[i], i))
        order = [results[i] for i in ranked]
        checked: list[Candidate] = []
        for result in order[:FILL_CHECKS]:
            checked.append(await self._fill(generator, session, query, result))
            if checked[-1].fillable:
                break
        fit = checked[-1].fillable
        trace["routing"] = ("reranked" if len(checked) == 1 else "grounded") if fit else "ambiguous"
        trace["checked"] = [candidate.summary() for candidate in checked]
        return checked[-1] if fit else None

    async def _fill(
        self, generator: ArgumentGenerator, session: Session, query: str, result: SearchResult
    ) -> Candidate:
        record = self.gateway.resolve(result.name)
        generated = await generator.generate(session, record, query)
        return Candidate(result, record, generated, grounding(query, record.input_schema, generated.arguments or {}))

    def _may_execute(self, record: ToolRecord, profile: Profile) -> bool:
        if profile.auto_execute is not None:
            return profile.auto_execute
        return record.read_only or record.name in self.settings.auto_execute

    def _proposal(
        self, record: ToolRecord, generated: Generated, trace: dict[str, Any], *, asked: bool = False
    ) -> types.CallToolResult:
        call = {"name": record.name, "arguments": generated.arguments}
        why = "this profile runs no tool without asking" if asked else "it is not read-only"
        text = f"{record.name} was not called: {why}. To run it, call call_tool with {json.dumps(call)}"
        return _result(text, {"status": "proposed", "call": call, "trace": trace})

    def _candidates(self, results: list[SearchResult], trace: dict[str, Any]) -> types.CallToolResult:
        lines = [result.signature for result in results]
        text = "Several tools fit this request; choose one and call it with call_tool:\n" + "\n".join(lines)
        candidates = [{"name": r.name, "signature": r.signature, "score": r.score} for r in results]
        return _result(text, {"status": "ambiguous", "candidates": candidates, "trace": trace})
