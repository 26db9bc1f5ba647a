"""`run`'s decision without a model: scripted fills and likelihoods, the real decision and grounding.

A catch-all (a free-text parameter the request is copied into) never wins; a value the request does not
support is decoded again among the request's own values of its kind before anything else is tried; a
fall-back needs better evidence; otherwise the best candidate is proposed, or the candidates come back.
"""

import json
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import pytest

from nexus_gateway.activity import Activity
from nexus_gateway.catalog import ToolRecord
from nexus_gateway.config import NexusSettings
from nexus_gateway.engine import Likelihoods, Session, Turn
from nexus_gateway.gateway import SearchResult
from nexus_gateway.generation.generator import Generated
from nexus_gateway.generation.grounding import ungrounded
from nexus_gateway.generation.rerank import Reranker
from nexus_gateway.generation.sessions import SessionPool
from nexus_gateway.meta.run import Runner

pytestmark = pytest.mark.anyio
ZONE = {"type": "string", "description": "IANA timezone name (e.g., 'America/New_York', 'Europe/London')"}
TOOLS = {
    "time__get_current_time": {"properties": {"timezone": ZONE}, "required": ["timezone"]},
    "time__convert_time": {
        "properties": {"source_timezone": ZONE, "time": {"type": "string"}, "target_timezone": ZONE},
        "required": ["source_timezone", "time", "target_timezone"],
    },
    "browser__wait_for": {"properties": {"text": {"type": "string"}}, "required": ["text"]},
    "hello__debug": {"properties": {}},
    "files__read_text_file": {"properties": {"path": {"type": "string"}}, "required": ["path"]},
    "files__search_files": {
        "properties": {"path": {"type": "string"}, "pattern": {"type": "string"}},
        "required": ["path", "pattern"],
    },
    "files__list_directory": {"properties": {"path": {"type": "string"}}, "required": ["path"]},
    "sentry__search_events": {"properties": {"query": {"type": "string"}}, "required": ["query"]},
    "postgres__query": {"properties": {"sql": {"type": "string"}}, "required": ["sql"]},
    "github__fork_repository": {"properties": {"repo": {"type": "string"}}, "required": ["repo"]},
    "gitlab__fork_repository": {"properties": {"project_id": {"type": "string"}}, "required": ["project_id"]},
    "jira__get_project_fields": {"properties": {"project": {"type": "string"}}, "required": ["project"]},
    "git__git_show": {
        "properties": {"repo_path": {"type": "string"}, "revision": {"type": "string"}},
        "required": ["repo_path", "revision"],
    },
    "git__git_log": {
        "properties": {"repo_path": {"type": "string"}, "max_count": {"type": "integer"}},
        "required": ["repo_path"],
    },
    "excel__describe_sheet": {
        "properties": {"path": {"type": "string"}, "sheet": {"type": "string"}},
        "required": ["path", "sheet"],
    },
    "excel__read_range": {
        "properties": {"path": {"type": "string"}, "sheet": {"type": "string"}, "range": {"type": "string"}},
        "required": ["path", "sheet"],
    },
    "jira__create_issue": {
        "properties": {"project": {"type": "string"}, "summary": {"type": "string"}},
        "required": ["project", "summary"],
    },
}


def record(name: str) -> ToolRecord:
    schema = {"type": "object", **TOOLS[name]}
    server, tool = name.split("__")
    return ToolRecord(name, server, tool, f"The {tool} tool.", schema, annotations={"readOnlyHint": True})


class Generator:
    """Fills from a script: per tool, the arguments the model writes, and those it writes when narrowed."""

    def __init__(self, plain: Mapping[str, dict[str, Any]], narrowed: Mapping[str, dict[str, Any]]) -> None:
        self.plain, self.narrowed_fill = plain, narrowed
        self.calls: list[tuple[str, dict[str, list[Any]] | None]] = []

    async def generate(
        self,
        session: Session,
        record: ToolRecord,
        query: str,
        *,
        narrowed: Mapping[str, Sequence[Any]] | None = None,
    ) -> Generated:
        self.calls.append((record.name, {k: list(v) for k, v in narrowed.items()} if narrowed else None))
        script = self.narrowed_fill if narrowed and record.name in self.narrowed_fill else self.plain
        arguments = dict(script[record.name])
        invented = tuple(ungrounded(query, record.input_schema, arguments))
        return Generated(record.name, arguments, "{}", "signature", "schema", "prefill", ungrounded=invented)

    def view(self, record: ToolRecord) -> dict[str, Any]:
        return record.input_schema


class Engine:
    """Sessions and likelihoods: `likelihoods` per tool name, `without` after no tool."""

    def __init__(self, likelihoods: Mapping[str, float], without: float = -40.0) -> None:
        self.likelihoods, self.without = likelihoods, without

    async def open_session(self) -> Session:
        return Session(1)

    async def close_session(self, session: Session) -> None:
        return None

    async def fork_session(self, session: Session) -> Session:
        return Session(session.id + 1)

    async def depth(self, session: Session) -> int:
        return 0

    async def append_turn(self, session: Session, turn: Turn, *, max_depth: int) -> None:
        return None

    async def request_likelihoods(self, records: Sequence[ToolRecord], query: str) -> Likelihoods:
        per_tool = tuple(self.likelihoods[r.name] for r in records)
        return Likelihoods(per_tool, self.without, 8, 0, 0.001)


class Core:
    """The part of `GatewayCore` that `run` uses, with scripted search results and an echoing upstream."""

    def __init__(self, ranked: Sequence[tuple[str, float]], *, automatic: bool = False) -> None:
        self.settings = NexusSettings()
        self.activity = Activity()
        self.ranked, self.automatic = ranked, automatic
        self.catalog = [record(name) for name in TOOLS]
        self.called: list[tuple[str, dict[str, Any]]] = []
        self._group: Any = None

    async def search(self, query: str, k: int | None = None, *, allows: Any = None) -> list[SearchResult]:
        return [
            SearchResult(name, f"{name}(...)", score, self.automatic and rank == 0)
            for rank, (name, score) in enumerate(self.ranked)
        ]

    def resolve(self, name: str) -> ToolRecord:
        return record(name)

    def servers(self) -> list[str]:
        return sorted({name.split("__")[0] for name in TOOLS})

    async def call_upstream(self, record: ToolRecord, arguments: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.called.append((record.name, arguments))
        return {"content": [{"type": "text", "text": "done"}]}

    def start_soon(self, task: Any, *, name: str | None = None) -> None:
        self._group.start_soon(task)


async def run(core: Core, generator: Generator, engine: Engine, request: str, *, sessions: int = 1) -> dict[str, Any]:
    """`run` with a pool of `sessions` engine sessions (1: no room for a fresh session or a fork, every fill in
    turn in the client's)."""
    runner = Runner(core)  # type: ignore[arg-type]
    runner._generator = generator  # type: ignore[assignment]
    runner._pool = SessionPool(engine, sessions)  # type: ignore[arg-type]
    runner._reranker = Reranker(engine, k=3)  # type: ignore[arg-type]
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            core._group = group
            result = await runner.run({"request": request})
    structured = result["structuredContent"] if isinstance(result, dict) else result.structured_content
    assert isinstance(structured, dict)
    return structured


PARIS = "what time is it in Paris?"
CATCH_ALL = {"browser__wait_for": {"text": "what time is it in Paris"}}


async def test_a_wrong_zone_is_decoded_again_among_the_zones_the_request_names_and_the_time_tool_is_called():
    core = Core([("time__get_current_time", 0.5), ("browser__wait_for", 0.49)])
    generator = Generator(
        {"time__get_current_time": {"timezone": "Europe/London"}, **CATCH_ALL},
        {"time__get_current_time": {"timezone": "Europe/Paris"}},
    )
    engine = Engine({"time__get_current_time": -10.0, "browser__wait_for": -20.0})
    structured = await run(core, generator, engine, PARIS)
    assert structured["status"] == "called", structured
    assert core.called == [("time__get_current_time", {"timezone": "Europe/Paris"})]
    assert generator.calls == [
        ("time__get_current_time", None),
        ("time__get_current_time", {"timezone": ["Europe/Paris"]}),
    ]
    trace = structured["trace"]
    assert trace["routing"] == "reranked" and trace["checked"][0]["narrowed"] == ["timezone"], trace
    assert {"route", "rerank", "fill", "call"} <= set(trace["timings_ms"]), trace


async def test_a_sure_and_decisive_tool_of_another_server_than_the_one_the_request_names_is_proposed():
    request = "run SELECT count(*) FROM events on postgres"
    core = Core([("sentry__search_events", 0.6), ("time__get_current_time", 0.2)])
    generator = Generator({"sentry__search_events": {"query": "count(*)"}}, {})
    engine = Engine({"sentry__search_events": -10.0, "time__get_current_time": -30.0})
    structured = await run(core, generator, engine, request)
    assert core.called == [] and structured["status"] == "proposed", structured
    assert "names postgres" in structured["doubt"] and structured["trace"]["named_servers"] == ["postgres"]
    named = Core([("postgres__query", 0.6), ("time__get_current_time", 0.2)])
    generator = Generator({"postgres__query": {"sql": "SELECT count(*) FROM events"}}, {})
    engine = Engine({"postgres__query": -10.0, "time__get_current_time": -30.0})
    structured = await run(named, generator, engine, request)  # the named server's own tool is called
    assert structured["status"] == "called" and named.called == [
        ("postgres__query", generator.plain["postgres__query"])
    ]


async def test_a_tool_another_server_offers_under_the_same_name_is_called_only_when_the_request_names_its_server():
    def setup() -> tuple[Core, Generator, Engine]:
        core = Core([("gitlab__fork_repository", 0.6), ("github__fork_repository", 0.58)])
        fills = {"gitlab__fork_repository": {"project_id": "vercel/next.js"}, "github__fork_repository": {"repo": ""}}
        engine = Engine({"gitlab__fork_repository": -10.0, "github__fork_repository": -25.0})
        return core, Generator(fills, {}), engine

    core, generator, engine = setup()
    structured = await run(core, generator, engine, "fork vercel/next.js to my account")
    assert core.called == [] and structured["status"] == "proposed", structured
    assert (
        structured["trace"]["same_operation"] == ["github__fork_repository"] and "another server" in structured["doubt"]
    )
    core, generator, engine = setup()
    structured = await run(core, generator, engine, "fork vercel/next.js to my account on gitlab")
    assert structured["status"] == "called" and core.called == [
        ("gitlab__fork_repository", {"project_id": "vercel/next.js"})
    ]


async def test_a_tool_that_takes_nothing_from_the_request_is_called_only_when_the_ranking_is_decisive():
    fills = {"hello__debug": {}, "time__get_current_time": {"timezone": "Europe/London"}}  # the rival invents
    core = Core([("hello__debug", 0.5), ("time__get_current_time", 0.49)])
    split = Engine({"hello__debug": -12.0, "time__get_current_time": -10.0})  # the model prefers the other one
    structured = await run(core, Generator(fills, {}), split, "show me the debug info")
    assert core.called == [] and structured["status"] == "proposed", structured
    assert "takes nothing from the request" in structured["doubt"] and structured["trace"]["routing"] == "close"
    core = Core([("hello__debug", 0.5), ("time__get_current_time", 0.49)])
    agreed = Engine({"hello__debug": -10.0, "time__get_current_time": -20.0})
    structured = await run(core, Generator(fills, {}), agreed, "show me the debug info")
    assert structured["status"] == "called" and core.called == [("hello__debug", {})], structured


class Together(Generator):
    """A fill waits until the other has begun: it finishes only when both are filled at once."""

    def __init__(self, plain: Mapping[str, dict[str, Any]]) -> None:
        super().__init__(plain, {})
        self.sessions: dict[str, int] = {}
        self.both = anyio.Event()

    async def generate(
        self, session: Session, record: ToolRecord, query: str, *, narrowed: Mapping[str, Sequence[Any]] | None = None
    ) -> Generated:
        self.sessions[record.name] = session.id
        if len(self.sessions) == 2:
            self.both.set()
        await self.both.wait()
        return await super().generate(session, record, query, narrowed=narrowed)


async def test_when_the_ranking_is_not_decisive_the_best_two_are_filled_at_once_in_a_fork_and_decided_alike():
    fills = {"hello__debug": {}, "time__get_current_time": {"timezone": "Europe/London"}}
    split = Engine({"hello__debug": -12.0, "time__get_current_time": -10.0})  # retrieval and the model disagree
    alone = await run(
        Core([("hello__debug", 0.5), ("time__get_current_time", 0.49)]),
        Generator(fills, {}),
        split,
        "show me the debug info",
    )
    together = Together(fills)
    core = Core([("hello__debug", 0.5), ("time__get_current_time", 0.49)])
    # three sessions: the client's, the fresh one a request that stands alone is filled in, and its fork
    structured = await run(core, together, split, "show me the debug info", sessions=3)
    assert structured["trace"]["filled_together"] == ["hello__debug", "time__get_current_time"], structured
    assert len(set(together.sessions.values())) == 2  # the second in a fork of the session of the first
    assert {k: structured[k] for k in ("status", "call", "doubt")} == {k: alone[k] for k in ("status", "call", "doubt")}
    assert structured["trace"]["checked"] == alone["trace"]["checked"] and core.called == []


async def test_a_sure_decisive_tool_that_matches_the_request_only_weakly_is_proposed_unless_the_floor_is_off():
    fills = {"time__get_current_time": {"timezone": "Europe/Paris"}, "hello__debug": {}}
    engine = Engine({"time__get_current_time": -10.0, "hello__debug": -30.0})
    core = Core([("time__get_current_time", 0.35), ("hello__debug", 0.1)])
    structured = await run(core, Generator(fills, {}), engine, PARIS)
    assert core.called == [] and structured["status"] == "proposed", structured
    assert "matches the request closely" in structured["doubt"] and structured["trace"]["min_score"] == 0.4
    core = Core([("time__get_current_time", 0.35), ("hello__debug", 0.1)])
    core.settings = NexusSettings(run_min_score=0)
    structured = await run(core, Generator(fills, {}), engine, PARIS)
    assert structured["status"] == "called" and core.called == [
        ("time__get_current_time", fills["time__get_current_time"])
    ]


async def test_the_request_copied_into_a_catch_all_never_wins_over_a_better_ranked_tool():
    core = Core([("time__get_current_time", 0.5), ("browser__wait_for", 0.49)])
    request = "what time is it in Atlantis?"  # no zone to narrow to: the time tool's zone stays invented
    generator = Generator(
        {"time__get_current_time": {"timezone": "Europe/London"}, "browser__wait_for": {"text": request}}, {}
    )
    engine = Engine({"time__get_current_time": -10.0, "browser__wait_for": -20.0})
    structured = await run(core, generator, engine, request)
    assert core.called == [] and structured["status"] == "ambiguous", structured
    checked = structured["trace"]["checked"]
    assert [c["tool"] for c in checked] == ["time__get_current_time", "browser__wait_for"], checked
    assert checked[1]["echoed"] == 1 and checked[1]["evidence"] == 0, checked


async def test_a_fall_back_is_called_only_with_more_evidence_and_above_no_tool_when_the_best_cannot_be_filled():
    core = Core([("time__convert_time", 0.5), ("time__get_current_time", 0.49)])
    convert = {"source_timezone": "Etc/UTC", "time": "15:00", "target_timezone": "Europe/London"}
    generator = Generator(
        {"time__convert_time": convert, "time__get_current_time": {"timezone": "Europe/London"}},
        {"time__get_current_time": {"timezone": "Asia/Tokyo"}},  # the fall-back is narrowed too
    )
    engine = Engine({"time__convert_time": -10.0, "time__get_current_time": -12.0})
    structured = await run(core, generator, engine, "what time is it in Tokyo?")
    assert core.called == [("time__get_current_time", {"timezone": "Asia/Tokyo"})], structured
    assert structured["trace"]["routing"] == "grounded"
    # the best one takes Tokyo too: as much evidence is no reason to call a lower-ranked tool, so it is proposed
    core = Core([("time__convert_time", 0.5), ("time__get_current_time", 0.49)])
    convert = {"source_timezone": "Etc/UTC", "time": "15:00", "target_timezone": "Asia/Tokyo"}
    generator = Generator(
        {"time__convert_time": convert, "time__get_current_time": {"timezone": "Europe/London"}},
        {"time__get_current_time": {"timezone": "Asia/Tokyo"}},
    )
    structured = await run(core, generator, engine, "what time is it in Tokyo?")
    assert core.called == [] and structured["status"] == "proposed", structured
    assert structured["call"]["name"] == "time__get_current_time" and structured["trace"]["routing"] == "grounded"
    unlikely = Engine({"time__convert_time": -10.0, "time__get_current_time": -50.0})  # below no tool (-40)
    core = Core([("time__convert_time", 0.5), ("time__get_current_time", 0.49)])
    structured = await run(core, generator, unlikely, "what time is it in Tokyo?")
    assert core.called == [] and structured["status"] == "ambiguous", structured


async def test_a_fall_back_as_grounded_as_the_best_is_called_when_it_states_more_of_the_request():
    request = "Show the last 2 commits of the git repository /srv/app"
    show = {"repo_path": "/srv/app", "revision": "HEAD~2"}  # the revision is made up
    log = {"repo_path": "/srv/app", "max_count": 2}  # as many required values, and the count too
    generator = Generator({"git__git_show": show, "git__git_log": log}, {})
    engine = Engine({"git__git_show": -10.0, "git__git_log": -12.0})
    core = Core([("git__git_show", 0.5), ("git__git_log", 0.49)])
    structured = await run(core, generator, engine, request)
    assert core.called == [("git__git_log", log)] and structured["trace"]["routing"] == "grounded", structured
    core = Core([("git__git_show", 0.5), ("git__git_log", 0.49)])
    generator = Generator({"git__git_show": show, "git__git_log": {"repo_path": "/srv/app"}}, {})
    structured = await run(core, generator, engine, request)
    assert core.called == [] and structured["status"] == "proposed", structured  # a tie in both: proposed


async def test_a_best_candidate_filled_only_by_an_echo_is_proposed_with_the_others_not_called():
    core = Core([("browser__wait_for", 0.5), ("time__get_current_time", 0.3)])
    generator = Generator({**CATCH_ALL, "time__get_current_time": {"timezone": "Europe/London"}}, {})
    engine = Engine({"time__get_current_time": -30.0, "browser__wait_for": -10.0})
    structured = await run(core, generator, engine, PARIS)
    assert core.called == [] and structured["status"] == "proposed", structured
    assert structured["call"] == {"name": "browser__wait_for", "arguments": CATCH_ALL["browser__wait_for"]}
    assert "repeat the request" in structured["doubt"]
    assert [c["name"] for c in structured["candidates"]] == ["browser__wait_for", "time__get_current_time"]
    assert structured["trace"]["routing"] == "uncertain"


async def test_an_automatic_choice_that_is_not_sure_is_re_ranked_like_any_other():
    core = Core([("browser__wait_for", 0.9), ("time__get_current_time", 0.45), ("hello__debug", 0.1)], automatic=True)
    generator = Generator(
        {**CATCH_ALL, "time__get_current_time": {"timezone": "Europe/London"}, "hello__debug": {}},
        {"time__get_current_time": {"timezone": "Europe/Paris"}},
    )  # three candidates: with two, standardized evidence that disagrees always ties
    engine = Engine({"time__get_current_time": -10.0, "browser__wait_for": -30.0, "hello__debug": -35.0})
    structured = await run(core, generator, engine, PARIS)
    assert core.called == [("time__get_current_time", {"timezone": "Europe/Paris"})], structured
    trace = structured["trace"]
    assert "repeat the request" in trace["automatic_doubt"] and trace["routing"] == "reranked", trace
    assert [name for name, _ in generator.calls].count("browser__wait_for") == 1  # filled once, reused


async def test_a_tool_that_takes_none_of_the_requests_paths_is_not_called_and_one_that_does_is_proposed():
    """ "read the file /tmp/hello.txt": a server called hello must not win with a tool that takes no path."""
    request = "read the file /tmp/hello.txt"
    plain = {"hello__debug": {}, "files__read_text_file": {"path": "/tmp/hello.txt"}}
    core = Core([("hello__debug", 0.9), ("files__read_text_file", 0.4)], automatic=True)
    engine = Engine({"hello__debug": -9.0, "files__read_text_file": -10.0})  # even when the model prefers it
    structured = await run(core, Generator(plain, {}), engine, request)
    assert core.called == [] and structured["status"] == "proposed", structured
    assert structured["call"] == {"name": "files__read_text_file", "arguments": {"path": "/tmp/hello.txt"}}
    assert structured["trace"]["routing"] == "grounded"
    assert structured["trace"]["checked"][0]["ignored"] == ["/tmp/hello.txt"]
    core = Core([("hello__debug", 0.9)], automatic=True)  # nothing better: proposed, never called
    structured = await run(core, Generator(plain, {}), Engine({"hello__debug": -9.0}), request)
    assert core.called == [] and structured["status"] == "proposed", structured
    assert "takes none of the request's values (/tmp/hello.txt)" in structured["doubt"]


async def test_a_sure_fill_is_proposed_not_called_when_another_tool_fits_about_as_well():
    """Two tools take the path and the model scores them alike: which one is meant is the host's call."""
    TOOLS["other__read_file"] = {"properties": {"path": {"type": "string"}}, "required": ["path"]}
    try:
        fills = {"files__read_text_file": {"path": "/tmp/a.txt"}, "other__read_file": {"path": "/tmp/a.txt"}}
        close = Engine({"files__read_text_file": -10.0, "other__read_file": -10.1, "hello__debug": -30.0})
        ranked = [("other__read_file", 0.50), ("files__read_text_file", 0.49), ("hello__debug", 0.2)]
        structured = await run(Core(ranked), Generator(fills, {}), close, "read /tmp/a.txt")
        assert structured["status"] == "proposed" and structured["trace"]["routing"] == "close", structured
        assert "about as well" in structured["doubt"]
        assert {c["name"] for c in structured["candidates"]} >= {"files__read_text_file", "other__read_file"}

        clear = Engine({"files__read_text_file": -4.0, "other__read_file": -20.0, "hello__debug": -30.0})
        agreed = [("files__read_text_file", 0.50), ("other__read_file", 0.45), ("hello__debug", 0.2)]
        structured = await run(Core(agreed), Generator(fills, {}), clear, "read /tmp/a.txt")
        assert structured["status"] == "called" and structured["trace"]["tool"] == "files__read_text_file", structured
    finally:
        del TOOLS["other__read_file"]


async def test_a_best_tool_that_takes_nothing_from_the_request_is_proposed_when_the_second_takes_something():
    TOOLS["db__list_tables"] = {"properties": {}}
    TOOLS["db__describe_table"] = {"properties": {"table_name": {"type": "string"}}, "required": ["table_name"]}
    try:
        fills = {"db__list_tables": {}, "db__describe_table": {"table_name": "customers"}}
        engine = Engine({"db__list_tables": -2.0, "db__describe_table": -20.0, "hello__debug": -30.0})
        ranked = [("db__list_tables", 0.6), ("db__describe_table", 0.5), ("hello__debug", 0.1)]
        request = "show me the columns of the customers table"
        structured = await run(Core(ranked), Generator(fills, {}), engine, request)
        assert structured["status"] == "proposed" and structured["trace"]["routing"] == "close", structured
        assert "db__describe_table takes values of the request" in structured["doubt"]

        fills["db__describe_table"] = {"table_name": "orders"}  # the second invents its value: the first is called
        structured = await run(Core(ranked), Generator(fills, {}), engine, request)
        assert structured["status"] == "called" and structured["trace"]["tool"] == "db__list_tables", structured
    finally:
        del TOOLS["db__list_tables"], TOOLS["db__describe_table"]


async def test_a_sure_decisive_tool_whose_name_does_another_kind_of_thing_than_the_request_asks_is_proposed():
    request = "create a jira ticket in project WEB: checkout is broken"
    core = Core([("jira__get_project_fields", 0.7), ("jira__create_issue", 0.65)])
    fills = {
        "jira__get_project_fields": {"project": "WEB"},
        "jira__create_issue": {"project": "WEB", "summary": "checkout is broken"},
    }
    engine = Engine({"jira__get_project_fields": -10.0, "jira__create_issue": -25.0})
    structured = await run(core, Generator(fills, {}), engine, request)
    assert core.called == [] and structured["status"] == "proposed", structured
    assert structured["trace"]["operation"] == "the request asks to create, and get_project_fields reads"
    core = Core([("jira__create_issue", 0.7), ("jira__get_project_fields", 0.65)])
    engine = Engine({"jira__create_issue": -10.0, "jira__get_project_fields": -25.0})
    structured = await run(core, Generator(fills, {}), engine, request)  # the tool named for it is called
    assert structured["status"] == "called" and core.called == [("jira__create_issue", fills["jira__create_issue"])]


async def test_no_fall_back_is_filled_once_the_request_is_older_than_the_fall_back_budget():
    core = Core([("time__convert_time", 0.5), ("time__get_current_time", 0.49)])
    core.settings = NexusSettings(run_fallback_s=0)
    convert = {"source_timezone": "Etc/UTC", "time": "15:00", "target_timezone": "Asia/Tokyo"}
    generator = Generator({"time__convert_time": convert, "time__get_current_time": {"timezone": "Asia/Tokyo"}}, {})
    engine = Engine({"time__convert_time": -10.0, "time__get_current_time": -12.0})
    structured = await run(core, generator, engine, "what time is it in Tokyo?")
    assert core.called == [] and structured["status"] == "ambiguous", structured
    assert {name for name, _ in generator.calls} == {"time__convert_time"}  # the fall-back was never filled
    assert structured["trace"]["fallback_budget_s"] == 0 and "time__get_current_time" in json.dumps(structured)


async def test_a_fall_back_that_takes_fewer_of_the_requests_values_than_the_best_is_proposed_not_called():
    """ "find every .csv under /data/exports": `search_files` takes the folder and a pattern the check does not
    find as written ("*.csv"); `list_directory` takes the folder alone. The lower-ranked tool is a guess."""
    request = "find every .csv under /data/exports"
    core = Core([("files__search_files", 0.5), ("files__list_directory", 0.49)])
    generator = Generator(
        {
            "files__search_files": {"path": "/data/exports", "pattern": "*.csv"},
            "files__list_directory": {"path": "/data/exports"},
        },
        {},
    )
    engine = Engine({"files__search_files": -10.0, "files__list_directory": -12.0})
    structured = await run(core, generator, engine, request)
    assert core.called == [] and structured["status"] == "proposed", structured
    assert structured["trace"]["routing"] == "grounded"
    assert [c["name"] for c in structured["candidates"]][:2] == ["files__list_directory", "files__search_files"]


async def test_a_sure_decisive_tool_that_leaves_out_some_of_the_requests_values_is_proposed_not_called():
    """ "what's in sales.xlsx, sheet Q1, cells A1:F30?": `describe_sheet` takes the file and the sheet, not the
    cells; the tool that takes them all is called."""
    request = "what's in /data/sales.xlsx, sheet Q1, cells A1:F30?"
    plain = {
        "excel__describe_sheet": {"path": "/data/sales.xlsx", "sheet": "Q1"},
        "excel__read_range": {"path": "/data/sales.xlsx", "sheet": "Q1", "range": "A1:F30"},
    }
    core = Core([("excel__describe_sheet", 0.8), ("excel__read_range", 0.6)])
    engine = Engine({"excel__describe_sheet": -5.0, "excel__read_range": -30.0})  # decisive for the wrong one
    structured = await run(core, Generator(plain, {}), engine, request)
    assert core.called == [] and structured["status"] == "proposed", structured
    assert structured["trace"]["unused_values"] == ["A1:F30"]
    assert "leaves out 'A1:F30'" in structured["doubt"]
    core = Core([("excel__read_range", 0.8), ("excel__describe_sheet", 0.6)])
    engine = Engine({"excel__read_range": -5.0, "excel__describe_sheet": -30.0})
    structured = await run(core, Generator(plain, {}), engine, request)
    assert core.called == [("excel__read_range", plain["excel__read_range"])], structured


class RecordingEngine(Engine):
    """An `Engine` that keeps the turns decoded into its sessions."""

    def __init__(self, likelihoods: Mapping[str, float]) -> None:
        super().__init__(likelihoods)
        self.turns: list[Turn] = []

    async def append_turn(self, session: Session, turn: Turn, *, max_depth: int) -> None:
        self.turns.append(turn)


class SearchLog(Core):
    """A `Core` that keeps what each search read."""

    def __init__(self, ranked: Sequence[tuple[str, float]]) -> None:
        super().__init__(ranked)
        self.searched: list[str] = []

    async def search(self, query: str, k: int | None = None, *, allows: Any = None) -> list[SearchResult]:
        self.searched.append(query)
        return await super().search(query, k, allows=allows)


async def test_a_follow_up_naming_no_operation_is_routed_by_the_last_request_even_one_only_proposed():
    """ "and in Tokyo again?" after a proposal: the proposal leaves a turn (arguments, no result) that the
    follow-up is filled after, and the follow-up is searched with the request it follows; "delete that file"
    names its own operation and is searched as itself."""
    from nexus_gateway.config.profiles import Profile

    core = SearchLog([("time__get_current_time", 0.5), ("browser__wait_for", 0.49)])
    generator = Generator({"time__get_current_time": {"timezone": "Europe/Paris"}, **CATCH_ALL}, {})
    engine = RecordingEngine({"time__get_current_time": -10.0, "browser__wait_for": -20.0})
    runner = Runner(core)  # type: ignore[arg-type]
    runner._generator = generator  # type: ignore[assignment]
    runner._pool = SessionPool(engine, 2)  # type: ignore[arg-type]
    runner._reranker = Reranker(engine, k=3)  # type: ignore[arg-type]
    asking = Profile("asking", auto_execute=False)
    host = object.__new__(type("Host", (), {}))  # one client: weak-referenceable
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            core._group = group
            first = await runner.run({"request": PARIS}, host, profile=asking)
            generator.plain = {"time__get_current_time": {"timezone": "Asia/Tokyo"}, **CATCH_ALL}
            again = await runner.run({"request": "and in Tokyo again?"}, host, profile=asking)
            await runner.run({"request": "delete that file"}, host, profile=asking)
            other = await runner.run({"request": "and in Lima?"}, object.__new__(type("Other", (), {})))
    assert [r.structured_content["status"] for r in (first, again)] == ["proposed", "proposed"]  # type: ignore[union-attr]
    assert core.searched == [PARIS, f"{PARIS} and in Tokyo again?", "delete that file", "and in Lima?"]
    assert again.structured_content["trace"]["follows"] == PARIS  # type: ignore[union-attr]
    assert "follows" not in other.structured_content["trace"]  # type: ignore[union-attr]
    assert engine.turns == [], engine.turns
