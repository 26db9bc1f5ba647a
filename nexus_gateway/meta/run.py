"""The `run` meta-tool: route the request, generate the arguments, validate, call (or propose) the tool.

    request -> GatewayCore.search -> margin gate -> tool -> ArgumentGenerator (the client's own engine
            session) -> jsonschema -> GatewayCore.call_upstream

Below the margin gate, the best `nexus.rerank_k` tools are re-ranked (generation/rerank.py: the local
model scores how likely the request is after each tool, fused with retrieval's scores); the best is
filled, and taken when its required arguments come from the request (generation/grounding.py) and
validate; if they do not, the next ones in re-ranked order are tried the same way (`FILL_CHECKS` in
all, within `nexus.run_fallback_s` of model time when set). When no candidate makes the request
likelier than no tool, or the request fills none of them, the candidates come back instead of a guess.
The trace says which (`routing`: reranked, grounded or ambiguous), with every candidate's scores, the
choice and its time. A sure choice is still only proposed when its server is in doubt (`_server_check`:
the request names another server, or another server offers the same operation), its name says it does
something else than the request's verb asks (`_operation_check`) or no tool matches the request closely
(`_close_enough`: `nexus.run_min_score`).

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
import re
import time
import weakref
from collections import OrderedDict
from collections.abc import Hashable
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.config.profiles import EVERYTHING, Profile
from nexus_gateway.engine import ManagedEngine, Session, Turn
from nexus_gateway.engine.backends import open_engine
from nexus_gateway.engine.settings import compiled_root, engine_settings
from nexus_gateway.errors import NexusError
from nexus_gateway.gateway import GatewayCore, SearchResult, ToolResult
from nexus_gateway.generation.generator import ArgumentGenerator, Generated
from nexus_gateway.generation.grounding import (
    Grounding,
    grounding,
    ignores_request,
    narrowing,
    stated_values,
    unused_values,
)
from nexus_gateway.generation.paraphrase import ParaphrasedChoices
from nexus_gateway.generation.plain import plain
from nexus_gateway.generation.rerank import Reranked, Reranker
from nexus_gateway.generation.sessions import SessionPool, follows_up, only_new_values
from nexus_gateway.meta.warming import BlockWarmer
from nexus_gateway.routing import gate, operations
from nexus_gateway.routing.mentions import catalog_products, named_servers, operation_words
from nexus_gateway.routing.retriever import HasEmbedder
from nexus_gateway.routing.specs import DEFAULT_SPEC

logger = logging.getLogger(__name__)

FILL_CHECKS = 2
"""Below the gate, at most this many tools are filled: the model's choice, then the next best one. A third fill
(3 until session 19) was taken in 25 of the 292 recorded `bench run-catalog` cases that made one: called 3 times,
all wrong; proposed 22 times, 7 of them right, where the candidates the host gets instead hold it anyway. It cost
1.5-6 s each time."""
DEFAULT_MIN_SCORE = 0.40
"""`run_min_score` with the default embedder (config/__init__.py says how it was chosen)."""
RESULT_CHARS = 200
"""How much of a result a session keeps in its history."""
SETTLE_AFTER_S = 1.0
"""How long no run must have been in progress before a session's queued turns are decoded (`_settle_later`)."""
REMEMBERED_CLIENTS = 1024
"""Clients whose last routed request is kept for a follow-up to be routed by (`Runner._asked`)."""


def _text(content: list[dict[str, Any]]) -> str:
    return "\n".join(str(block.get("text", "")) for block in content if block.get("type") == "text")


def _result(text: str, structured: dict[str, Any], *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured, is_error=error
    )


def _more_evidence(request: str, fallback: Candidate, top: Candidate) -> bool:
    """Whether `fallback` takes more of the request's values than `top`: more of its required values, or as many
    and more in all (`stated_values`: "show the last 2 commits of /srv/app" fills `git_log`'s optional count too,
    and `git_show` only the path). A tie in both is no reason to call a lower-ranked tool: of the 30 fall-back calls
    of the recorded `bench run-catalog` runs, 17 were wrong, every wrong one of session 18's code such a tie."""
    if fallback.grounding.evidence != top.grounding.evidence:
        return fallback.grounding.evidence > top.grounding.evidence
    after = stated_values(request, fallback.generated.arguments or {}, plain(fallback.record.input_schema))
    return after > stated_values(request, top.generated.arguments or {}, plain(top.record.input_schema))


def _same_operation(one: ToolRecord, other: ToolRecord | None) -> bool:
    """Two servers' tools of the same name, word for word (`fork_repository`, `read_file`)."""
    if other is None or one.server == other.server:
        return False
    return operation_words(one.upstream_name) == operation_words(other.upstream_name)


_WORDS = re.compile(r"[^\W_]{2,}")


@dataclass(frozen=True)
class Candidate:
    result: SearchResult
    record: ToolRecord
    generated: Generated
    grounding: Grounding
    narrowed: tuple[str, ...] = ()
    """Parameters decoded again among the request's own values of their kind (grounding.narrowing)."""
    ignored: tuple[str, ...] = ()
    """The request's paths, URLs and e-mail addresses when the arguments use none of them."""

    @property
    def missing(self) -> tuple[str, ...]:
        """Required facts the request does not give, for the host to supply (the generator's `missing`)."""
        return self.generated.missing

    @property
    def fillable(self) -> bool:
        """The arguments validate and no required value had to be invented."""
        return self.generated.schema_valid and self.grounding.invented == 0

    @property
    def sure(self) -> bool:
        """Fillable, with no value that merely echoes the request and no fact left to ask for: the best
        candidate is called when it is sure."""
        return self.fillable and self.grounding.echoed == 0 and not self.missing and not self.ignored

    @property
    def grounded(self) -> bool:
        """Sure, and the request supplies at least one of its values: the only evidence that lets a
        candidate the re-ranker did not put first be called instead."""
        return self.sure and self.grounding.evidence > 0

    @property
    def proposable(self) -> bool:
        """Valid, and whatever it lacks is said (an echo, a missing fact), not invented silently."""
        invented = set(self.generated.ungrounded) - set(self.missing)
        return self.generated.schema_valid and not (invented & set(self.record.input_schema.get("required") or ()))

    def lacks(self, request: str) -> bool:
        """The request holds nothing of the values it does not support: a value it lacks (`convert_time`'s time
        for "what time is it in Tokyo?"), not one it writes in another form (`"*.csv"` for "every .csv")."""
        said = set(_WORDS.findall(request.lower()))
        arguments = self.generated.arguments or {}
        return not any(
            said & set(_WORDS.findall(json.dumps(arguments.get(name), ensure_ascii=False).lower()))
            for name in self.generated.ungrounded
        )

    def doubt(self) -> str:
        """Why it is only proposed."""
        if self.missing:
            return f"the request does not give {', '.join(self.missing)}"
        if self.grounding.echoed:
            return "its arguments only repeat the request, which says nothing of whether this tool fits"
        if self.ignored:
            return f"it takes none of the request's values ({', '.join(self.ignored)})"
        return "the request does not support its arguments"

    def summary(self) -> dict[str, Any]:
        return {
            "tool": self.record.name,
            "arguments": self.generated.arguments,
            "schema_valid": self.generated.schema_valid,
            "invented": self.grounding.invented,
            "echoed": self.grounding.echoed,
            "evidence": self.grounding.evidence,
            **({"narrowed": list(self.narrowed)} if self.narrowed else {}),
            **({"missing": list(self.missing)} if self.missing else {}),
            **({"ignored": list(self.ignored)} if self.ignored else {}),
        }


@dataclass(frozen=True)
class Choice:
    candidate: Candidate
    doubt: str | None = None
    """Why the candidate is only proposed (with the others), or None when it is sure."""
    others: tuple[SearchResult, ...] = ()


class _Clock:
    """Milliseconds spent in each stage of one `run` (a stage met twice adds up), for the trace."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.laps[stage] = round(self.laps.get(stage, 0.0) + (now - self._last) * 1000, 2)
        self._last = now


class Runner:
    def __init__(self, gateway: GatewayCore) -> None:
        self.gateway = gateway
        self.settings = gateway.settings
        self._engine: ManagedEngine | None = None
        self._generator: ArgumentGenerator | None = None
        self._pool: SessionPool | None = None
        self._reranker: Reranker | None = None
        self.warmer = BlockWarmer(lambda: list(gateway.catalog), scoring=gateway.settings.warm_blocks)
        self._starting = anyio.Lock()
        self._keys: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        self._numbers = itertools.count(1)
        self._asked: OrderedDict[Hashable, str] = OrderedDict()
        """Each client's last request that reached a tool (called or proposed): what a follow-up that names no
        operation of its own ("and in Tokyo?", "the same for Berlin") is routed by (`_routed`)."""

    @property
    def engine_loaded(self) -> bool:
        return self._engine is not None

    async def _start(self) -> tuple[ArgumentGenerator, SessionPool]:
        async with self._starting:
            if self._generator is None or self._pool is None or self._reranker is None:
                settings = engine_settings(self.gateway.config)
                engine = open_engine(settings, compiled_root=compiled_root(settings, self.gateway.config))
                await engine.__aenter__()
                if settings.backend != "local" and self.settings.run_mode == "splice":
                    logger.info(
                        "run_mode splice: KV-block splicing needs the local engine; on the %s backend the tool's "
                        "full schema is prefilled instead (run_mode prefill)",
                        settings.backend,
                    )
                self._engine = engine
                room = settings.n_ctx // settings.sessions - 256
                self._pool = SessionPool(engine, settings.sessions, max_depth=max(64, room))
                retriever = getattr(self.gateway, "retriever", None)  # the Gateway's; a core without one reads none
                choices = ParaphrasedChoices(lambda: retriever.embedder if isinstance(retriever, HasEmbedder) else None)
                self._generator = ArgumentGenerator(
                    engine, mode=self.settings.run_mode, cold="signature", choices=choices
                )
                self._reranker = Reranker(engine, k=self.settings.rerank_k)
                self.warmer.attach(engine, self._generator)
                self.gateway.start_soon(self.warmer.run, name="block-warmer")
            return self._generator, self._pool

    async def rerank(self, query: str, results: list[SearchResult]) -> Reranked:
        """The first `rerank_k` of `results` re-ordered with the local model's evidence (search_tools' `rerank`)."""
        await self._start()
        assert self._reranker is not None
        records = [self.gateway.resolve(result.name) for result in results]
        with self.warmer.busy():
            return await self._reranker.rerank(query, records, [result.score for result in results])

    async def aclose(self) -> None:
        """Close the engine (the gateway has cancelled the background turns first: they are dropped)."""
        if self._engine is not None:
            engine, self._engine, self._generator, self._pool = self._engine, None, None, None
            self.warmer.detach()
            self._reranker = None
            await engine.__aexit__(None, None, None)

    def _settle_later(self, pool: SessionPool, key: Hashable) -> None:
        """Decode the session's new turn in the background, once no run has been in progress for
        `SETTLE_AFTER_S`: the engine decodes one thing at a time, so a turn decoded while the host is already
        asking again would hold up the next request (back to back, a request waited 0.5 s for it at the 95th
        percentile on the everyday set); a request that reads the history decodes the turns still queued first."""
        self.gateway.start_soon(lambda: self._settle(pool, key))

    async def _settle(self, pool: SessionPool, key: Hashable) -> None:
        try:
            await self.warmer.idle_for(SETTLE_AFTER_S)
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
        with self.warmer.busy():
            result = await self._run(arguments, client, profile)
        self.gateway.activity.record_run(str(arguments.get("request", "")), result, time.perf_counter() - started)
        return result

    async def _run(self, arguments: dict[str, Any], client: object | None, profile: Profile) -> ToolResult:
        request = str(arguments.get("request", "")).strip()
        if not request:
            raise NexusError("run needs a non-empty 'request': say what to do, with the values it needs.")
        context = str(arguments.get("context") or "").strip()
        query = f"{context}\n{request}" if context else request
        clock = _Clock()
        key = self._key(client)
        root = None if context else self._routed(key, request)
        routed = f"{root} {request}" if root else request
        results = await self.gateway.search(
            routed,
            max(self.settings.search_k, self.settings.rerank_k),
            allows=None if profile.everything else profile.allows,
        )
        clock.lap("route")
        if not results:
            raise NexusError(f"No tool matches {request!r}; try other words, or search_tools.")
        generator, pool = await self._start()
        clock.lap("engine_start")
        margin = gate.margin([result.score for result in results])
        shown = round(margin, 4) if math.isfinite(margin) else None
        trace: dict[str, Any] = {"score": results[0].score, "margin": shown, "routing": "automatic", "reranked": False}
        if root:
            trace["follows"] = root
        trace["timings_ms"] = clock.laps
        async with (
            pool.attach(key) as client_session,
            self._scratch(pool, request, context) as fresh,
            nullcontext() if fresh is not None else pool.hold(key),  # the history is read: its last turn first
        ):
            engine_session = fresh or client_session
            trace["history"] = fresh is None  # the fill reads the client's earlier turns
            clock.lap("session")
            ranked_by = f"{root}\n{query}" if root else query
            choice = await self._pick(
                generator, pool, engine_session, query, results, trace, clock, ranked_by=ranked_by
            )
            choice = self._server_check(query, choice, results, trace)
            choice = self._operation_check(request, choice, results, trace)
            choice = self._close_enough(choice, results, trace)
            choice = self._values_check(request, choice, results, trace)
            if choice is None:
                return self._candidates(results, trace)
            picked = choice.candidate
            record, generated = picked.record, picked.generated
            trace |= {"tool": record.name, "score": picked.result.score, **generated.trace()}
            trace |= {"session": client_session.id, "session_depth": await pool.depth(client_session)}
            if generated.arguments is None or generated.problems:
                why = "; ".join(generated.problems) or f"the model's output is not a JSON object: {generated.text!r}"
                text = f"Could not fill the arguments of {record.name}: {why}. Use call_tool with your own."
                return _result(text, {"status": "invalid_arguments", "trace": trace}, error=True)
            self._remember(key, root or request)
            if choice.doubt is not None:
                return self._doubt(picked, choice, trace)
            if not self._may_execute(record, profile):
                return self._proposal(record, generated, trace, asked=profile.auto_execute is False)
            clock.lap("decide")
            called = await self.gateway.call_upstream(record, generated.arguments)
            clock.lap("call")
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

    def _routed(self, key: Hashable, request: str) -> str | None:
        """The client's earlier request a follow-up that gives only new values is routed by (`only_new_values`:
        "and in Tokyo again?" after "what's the weather in Paris?" is searched as both; "delete that file" is
        searched as itself and only filled after the history, and so is "delete it": it names its operation)."""
        if not only_new_values(request) or operations.request_verb(request) is not None:
            return None
        return self._asked.get(key)

    def _remember(self, key: Hashable, request: str) -> None:
        self._asked[key] = request
        self._asked.move_to_end(key)
        while len(self._asked) > REMEMBERED_CLIENTS:
            self._asked.popitem(last=False)

    @staticmethod
    def _scratch(pool: SessionPool, request: str, context: str) -> AbstractAsyncContextManager[Session | None]:
        """Where a request that stands alone is filled: a fresh session (`SessionPool.fresh`), not the client's
        history; a request that follows up on it (`follows_up`), or comes with the host's `context`, reads it."""
        return nullcontext(None) if context or follows_up(request) else pool.fresh()

    async def _pick(
        self,
        generator: ArgumentGenerator,
        pool: SessionPool,
        session: Session,
        query: str,
        results: list[SearchResult],
        trace: dict[str, Any],
        clock: _Clock,
        *,
        ranked_by: str,
    ) -> Choice | None:
        """The best candidate when it is sure (`Candidate.sure`); else another of the best few (re-ranked
        order) that the request grounds (`Candidate.grounded`) and that explains the request: called when
        the best one needs values the request does not hold ("what time is it in Tokyo?": `convert_time`
        wants a time: `Candidate.lacks`) and the fall-back takes more of the request's values;
        proposed with the others when the best one takes more of them or its unsupported value holds words of
        the request (a form the check does not read, "*.csv" for "every .csv", more often than a tool that does
        not fit: on the fresh everyday set 4 of 4 such calls were wrong, the best one right in 3), or when the
        best one was only doubtful (an echo, a path it
        does not take: the re-ranker's evidence still points to it, so a lower-ranked tool is a guess);
        else the best one proposed with the others when it is proposable; else None (the candidates come
        back). A sure best candidate that does not stand clear of the second (`Reranked.decisive`) is called
        only when the second is not sure as well; when both are, it is proposed with the others ("read
        ~/notes/todo.md": a documentation tool takes a path as surely as `read_text_file`). So is a sure best
        candidate that takes nothing from the request when the second takes something ("show me the columns
        of the customers table": `list_tables {}` against `describe_table {"table_name": "customers"}`), or
        when it does not stand clear at all: with no value of the request for it, only a decisive ranking
        speaks for it (on the everyday development set, 3 of the 4 calls that took nothing from the request
        and led by less than `DECISIVE_LEAD` were wrong).

        A value the request does not support is first decoded again among the request's own values of
        its kind (`_tightened`). The automatic choice (above the margin gate) is called when sure; when not,
        the candidates are re-ranked like any request below the gate.

        When the ranking is not decisive, the best two are always both filled, so they are filled together
        (`_fill_pair`): the second in a fork of the session, their decoding steps in one batch. The re-ranker
        reads `ranked_by`: the query, after the earlier request a follow-up is routed by (`_routed`)."""
        filled: dict[str, Candidate] = {}
        began = time.perf_counter()  # the model's work for this request: not the engine's start, not a session's wait

        async def fill(result: SearchResult, *, tighten: bool, into: Session = session) -> Candidate:
            candidate = filled.get(result.name)
            if candidate is None:
                candidate = await self._fill(generator, into, query, result)
                if tighten:
                    candidate = await self._tightened(generator, into, query, candidate)
                filled[result.name] = candidate
                clock.lap("fill")
            return candidate

        async def fill_pair(first: SearchResult, second: SearchResult) -> None:
            async with pool.fork(session) as fork:
                if fork is None:  # every engine session is taken: one after the other, as they are asked for
                    return
                failed: list[Exception] = []

                async def one(result: SearchResult, into: Session) -> None:
                    try:
                        await fill(result, tighten=True, into=into)
                    except Exception as exc:  # raised below, once both are done (not as an exception group)
                        failed.append(exc)

                async with anyio.create_task_group() as group:
                    group.start_soon(one, first, session)
                    group.start_soon(one, second, fork)
            trace["filled_together"] = [first.name, second.name]
            if failed:
                raise failed[0]

        if results[0].automatic:
            first = await fill(results[0], tighten=True)
            if first.sure:
                return Choice(first)
            trace["automatic_doubt"] = first.doubt()
        reranked = await self.rerank(ranked_by, results)
        clock.lap("rerank")
        trace |= reranked.trace()
        if reranked.choice is None:
            trace["routing"] = "ambiguous"
            return None
        ranked = sorted(range(len(reranked.fused)), key=lambda i: (-reranked.fused[i], i))
        explains = {reranked.candidates[i]: reranked.likelihood[i] > reranked.without for i in ranked}
        order = [results[i] for i in ranked]
        if len(order) > 1 and not reranked.decisive():  # the second is filled whatever the first gives
            await fill_pair(order[0], order[1])
        top = await fill(order[0], tighten=True)
        checked = [top]
        choice: Choice | None = None
        if top.sure:
            decisive, rival = reranked.decisive(), None
            if (not decisive or not top.grounding.evidence) and len(order) > 1:
                rival = await fill(order[1], tighten=True)
                checked.append(rival)
            contested = (
                rival is not None and rival.sure and (not decisive or rival.grounding.evidence > top.grounding.evidence)
            )
            if not contested and (decisive or top.grounding.evidence):
                choice, trace["routing"] = Choice(top), "reranked"
            elif not contested:  # nothing from the request speaks for it, and the ranking is no surer
                why = "it takes nothing from the request, and the ranking does not set it clear of the others"
                others = tuple(result for result in order if result.name != top.record.name)
                choice, trace["routing"] = Choice(top, why, others), "close"
            else:  # another tool fits about as well, or takes values of the request the best one leaves out
                assert rival is not None
                why = (
                    f"{rival.record.name} fits the request about as well, so check which one is meant"
                    if not decisive
                    else f"{rival.record.name} takes values of the request that {top.record.name} leaves out"
                )
                others = tuple(result for result in order if result.name != top.record.name)
                choice, trace["routing"] = Choice(top, why, others), "close"
        else:
            budget = self.settings.run_fallback_s
            for result in order[1:FILL_CHECKS]:
                if budget is not None and time.perf_counter() - began >= budget:
                    trace["fallback_budget_s"] = budget  # the candidates go back now; they hold the fall-backs
                    break
                checked.append(await fill(result, tighten=True))
                fallback = checked[-1]
                if fallback.grounded and explains.get(result.name, False):
                    lacking = top.grounding.invented and not top.missing and top.lacks(query)  # cannot fill it
                    if lacking and _more_evidence(query, fallback, top):
                        choice, trace["routing"] = Choice(fallback), "grounded"
                    else:
                        why = (
                            f"the best-ranked tool, {top.record.name}, does not fit it as filled ({top.doubt()}); "
                            f"{fallback.record.name} is filled from the request but ranked lower, so check it first"
                        )
                        others = tuple(r for r in order if r.name != fallback.record.name)
                        choice, trace["routing"] = Choice(fallback, why, others), "grounded"
                    break
        if choice is None and top.proposable:
            others = tuple(result for result in order if result.name != top.record.name)
            choice, trace["routing"] = Choice(top, top.doubt(), others), "uncertain"
        elif choice is None:
            trace["routing"] = "ambiguous"
        trace["checked"] = [candidate.summary() for candidate in checked]
        return choice

    def _server_check(
        self, query: str, choice: Choice | None, results: list[SearchResult], trace: dict[str, Any]
    ) -> Choice | None:
        """`choice`, proposed instead of called when its server is in doubt: the request names servers, by
        their names or their products' (routing/mentions.py), and the tool is none of theirs ("run SELECT
        count(*) FROM events on postgres": not Sentry's `search_events`), or another server among the
        candidates offers the same operation under the same name and the request does not name the chosen one
        ("fork vercel/next.js": GitHub's or GitLab's `fork_repository`)."""
        if choice is None or choice.doubt is not None:
            return choice
        catalog = tuple((tool.server, tool.upstream_name, tool.description) for tool in self.gateway.catalog)
        named = named_servers(query, self.gateway.servers(), catalog_products(catalog))
        record = choice.candidate.record
        others = tuple(result for result in results if result.name != record.name)
        if named and record.server not in named:
            trace["named_servers"] = sorted(named)
            why = f"the request names {', '.join(sorted(named))}, and {record.name} is not one of its tools"
            return Choice(choice.candidate, why, others)
        if record.server in named:
            return choice
        twins = [other.name for other in others if _same_operation(record, self._record(other.name))]
        if twins:
            trace["same_operation"] = twins
            why = f"{', '.join(twins)} does the same on another server, and the request does not say which"
            return Choice(choice.candidate, why, others)
        return choice

    def _operation_check(
        self, request: str, choice: Choice | None, results: list[SearchResult], trace: dict[str, Any]
    ) -> Choice | None:
        """`choice`, proposed instead of called when its name says it does another kind of thing than the
        request's leading verb asks, or the verb names another candidate (routing/operations.py: "create a jira
        ticket" is not `jira_get_project_fields`, "reply in the thread" is `reply_to_thread`, not `post_message`)."""
        if choice is None or choice.doubt is not None:
            return choice
        record = choice.candidate.record
        others = tuple(result for result in results if result.name != record.name)
        names = [found.upstream_name for result in others if (found := self._record(result.name)) is not None]
        why = operations.conflict(request, record.upstream_name, names)
        if why is None:
            return choice
        trace["operation"] = why
        return Choice(choice.candidate, why, others)

    def _values_check(
        self, request: str, choice: Choice | None, results: list[SearchResult], trace: dict[str, Any]
    ) -> Choice | None:
        """`choice`, proposed instead of called when its arguments leave out some of the request's specific
        values (grounding.unused_values: a second paper id, the cells of "sales.xlsx, sheet Q1, cells A1:F30",
        the quoted comment of "leave a comment 'looks good to me' on page ..."): a tool that cannot take what
        the user spelled out is the wrong one, or does less than asked. Over the recorded `bench run-catalog`
        runs, 11 of 108 wrong calls did so and 2 of 909 right ones."""
        if choice is None or choice.doubt is not None:
            return choice
        record = choice.candidate.record
        names = (*self.gateway.servers(), record.name, record.upstream_name)
        unused = unused_values(request, choice.candidate.generated.arguments or {}, names)
        if not unused:
            return choice
        trace["unused_values"] = unused
        why = f"it leaves out {', '.join(repr(value) for value in unused)} of the request"
        return Choice(choice.candidate, why, tuple(result for result in results if result.name != record.name))

    def _record(self, name: str) -> ToolRecord | None:
        """The tool `name`, or None when it is gone or withheld since the search."""
        try:
            return self.gateway.resolve(name)
        except NexusError:
            return None

    def _close_enough(self, choice: Choice | None, results: list[SearchResult], trace: dict[str, Any]) -> Choice | None:
        """`choice`, proposed instead of called when its retrieval score is below `run_min_score`: no tool of the
        catalog matches the request closely, so the model's preference among weak matches is no ground to act."""
        floor = self.settings.run_min_score
        if floor is None:
            floor = DEFAULT_MIN_SCORE if self.settings.embedder == DEFAULT_SPEC else 0.0
        if choice is None or choice.doubt is not None or choice.candidate.result.score >= floor:
            return choice
        record = choice.candidate.record
        why = (
            f"no tool matches the request closely ({record.name} scores {choice.candidate.result.score:.2f} < {floor})"
        )
        trace["min_score"] = floor
        return Choice(choice.candidate, why, tuple(result for result in results if result.name != record.name))

    async def _fill(
        self, generator: ArgumentGenerator, session: Session, query: str, result: SearchResult
    ) -> Candidate:
        record = self.gateway.resolve(result.name)
        generated = await generator.generate(session, record, query)
        arguments = generated.arguments or {}
        ignored = tuple(ignores_request(query, arguments))
        return Candidate(
            result, record, generated, grounding(query, generator.view(record), arguments), ignored=ignored
        )

    async def _tightened(
        self, generator: ArgumentGenerator, session: Session, query: str, candidate: Candidate
    ) -> Candidate:
        """`candidate`, or when the request does not support some of its values, the same tool decoded
        again with those parameters narrowed to the request's own values of their kind (a zone the request
        names, its URLs, paths, dates, numbers: grounding.narrowing); kept when that invents less."""
        if candidate.sure or not candidate.generated.ungrounded:
            return candidate
        record = candidate.record
        narrowed = narrowing(query, generator.view(record), candidate.generated.ungrounded)
        if not narrowed:
            return candidate
        generated = await generator.generate(session, record, query, narrowed=narrowed)
        arguments = generated.arguments or {}
        tighter = Candidate(
            candidate.result,
            record,
            generated,
            grounding(query, generator.view(record), arguments),
            tuple(narrowed),
            tuple(ignores_request(query, arguments)),
        )
        better = tighter.generated.schema_valid and tighter.grounding.invented < candidate.grounding.invented
        return tighter if better else candidate

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

    def _doubt(self, picked: Candidate, choice: Choice, trace: dict[str, Any]) -> types.CallToolResult:
        """The best candidate proposed, not called, with why and the other candidates."""
        record = picked.record
        call = {"name": record.name, "arguments": picked.generated.arguments}
        lines = [result.signature for result in choice.others]
        text = (
            f"{record.name} was not called: {choice.doubt}. If it is the right tool, call call_tool with "
            f"{json.dumps(call)} (with the values it needs); otherwise one of these:\n" + "\n".join(lines)
        )
        candidates = [{"name": picked.result.name, "signature": picked.result.signature, "score": picked.result.score}]
        candidates += [{"name": r.name, "signature": r.signature, "score": r.score} for r in choice.others]
        structured: dict[str, Any] = {
            "status": "proposed",
            "call": call,
            "doubt": choice.doubt,
            "candidates": candidates,
            "trace": trace,
        }
        if picked.missing:
            structured["missing"] = list(picked.missing)
        return _result(text, structured)

    def _candidates(self, results: list[SearchResult], trace: dict[str, Any]) -> types.CallToolResult:
        lines = [result.signature for result in results]
        text = "Several tools fit this request; choose one and call it with call_tool:\n" + "\n".join(lines)
        candidates = [{"name": r.name, "signature": r.signature, "score": r.score} for r in results]
        return _result(text, {"status": "ambiguous", "candidates": candidates, "trace": trace})
