"""`ArgumentGenerator`: what it makes of the engine's decoded text (drops, flags, problems, the trace), with a
scripted engine, and the whole path once with the real default model (the shared `gen_runtime`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.engine import ColdSchema, Decoded, Decoding, Session, Turn
from nexus_gateway.engine.decoding import decode_steps
from nexus_gateway.engine.runtime import Runtime
from nexus_gateway.errors import ConfigError
from nexus_gateway.generation.generator import BUDGET_BASE, ArgumentGenerator, check_mode, token_budget
from tests.engine.conftest import WEATHER

pytestmark = pytest.mark.anyio


def tool(name: str, properties: dict[str, Any], required: list[str]) -> ToolRecord:
    schema = {"type": "object", "properties": properties, "required": required}
    return ToolRecord.from_tool("notes", {"name": name, "description": f"{name}.", "inputSchema": schema})


SEARCH = tool("search_notes", {"query": {"type": "string"}, "folder": {"type": "string"}}, ["query"])
TITLED = tool("create_note", {"title": {"type": "string", "minLength": 5}}, ["title"])
PING = tool("ping", {}, [])


class ScriptedEngine:
    """An `Engine` whose decoder answers with the given texts, in order; it records what it was asked."""

    def __init__(self, *answers: Decoded) -> None:
        self.answers = list(answers)
        self.decoded: list[tuple[str, Decoding]] = []
        self.prepared: list[list[str]] = []
        self.compiled: set[str] = set()
        self.deep: set[int] = set()
        """Sessions deeper than a splice is trusted at."""

    async def open_session(self) -> Session:
        return Session(0)

    async def close_session(self, session: Session) -> None:
        pass

    async def depth(self, session: Session) -> int:
        return 0

    async def append_turn(self, session: Session, turn: Turn, *, max_depth: int) -> None:
        pass

    async def decode_arguments(self, session: Session, record: ToolRecord, query: str, how: Decoding) -> Decoded:
        self.decoded.append((record.name, how))
        return self.answers.pop(0)

    async def prepare_blocks(self, records: Sequence[ToolRecord]) -> None:
        self.prepared.append([record.name for record in records])
        self.compiled.update(record.name for record in records)

    async def cold_schema(self, session: Session, record: ToolRecord) -> ColdSchema | None:
        if record.name not in self.compiled:
            return "uncompiled"
        return "deep" if session.id in self.deep else None

    async def prepare_scoring(self, records: Sequence[ToolRecord]) -> int:
        return 0


def decoded(text: str, *, complete: bool = True, closed_early: bool = False) -> Decoded:
    return Decoded(text, complete, None, 12, 0.01, 0.05, closed_early=closed_early)


async def test_an_optional_argument_the_request_does_not_contain_is_dropped():
    engine = ScriptedEngine(decoded('{"query": "taxes", "folder": "archive"}'))
    generated = await ArgumentGenerator(engine).generate(Session(0), SEARCH, "find my notes about taxes")
    assert generated.arguments == {"query": "taxes"} and generated.dropped == ("folder",)
    assert generated.schema_valid and generated.trace()["dropped"] == ["folder"]


async def test_an_optional_value_in_the_singular_of_a_word_the_request_writes_is_kept_as_the_request_writes_it():
    engine = ScriptedEngine(decoded('{"query": "Taxes", "folder": "receipt"}'))
    generated = await ArgumentGenerator(engine).generate(Session(0), SEARCH, "find my notes about taxes in receipts")
    assert generated.arguments == {"query": "taxes", "folder": "receipts"} and generated.dropped == ()


async def test_a_required_value_the_request_lacks_is_kept_and_flagged_ungrounded():
    engine = ScriptedEngine(decoded('{"query": "budget"}'))
    generated = await ArgumentGenerator(engine).generate(Session(0), SEARCH, "find my notes about taxes")
    assert generated.arguments == {"query": "budget"} and generated.ungrounded == ("query",)
    assert generated.dropped == () and generated.schema_valid


async def test_a_tool_without_parameters_gets_empty_arguments_without_asking_the_model():
    engine = ScriptedEngine()
    generated = await ArgumentGenerator(engine).generate(Session(0), PING, "ping the server")
    assert generated.arguments == {} and generated.schema_valid and generated.placement is None
    assert engine.decoded == []


async def test_the_token_budget_grows_with_the_request_up_to_the_ceiling():
    engine = ScriptedEngine(decoded('{"query": "taxes"}'), decoded('{"query": "taxes"}'))
    generator = ArgumentGenerator(engine, max_tokens=160)
    await generator.generate(Session(0), SEARCH, "notes about taxes")
    await generator.generate(Session(0), SEARCH, "notes about taxes " * 20)
    budgets = [how.max_tokens for _, how in engine.decoded]
    assert budgets == [token_budget("notes about taxes", 160), 160] and budgets[0] < 80
    assert token_budget("x" * 40, 160) == BUDGET_BASE + 30


async def test_output_that_never_closes_is_not_json_and_the_problem_names_the_budget():
    engine = ScriptedEngine(decoded('{"query": "tax', complete=False), decoded('{"query": "ta', complete=False))
    generated = await ArgumentGenerator(engine, max_tokens=8).generate(Session(0), SEARCH, "notes about taxes")
    assert generated.arguments is None and not generated.json_valid and generated.retries == 1
    assert len(generated.problems) == 1 and "did not close within 8 + " in generated.problems[0]


async def test_arguments_closed_early_that_fail_the_schema_say_the_budget_ran_out_first():
    engine = ScriptedEngine(
        decoded('{"title": "ab"}', closed_early=True), decoded('{"title": "ab"}', closed_early=True)
    )
    generated = await ArgumentGenerator(engine, max_tokens=4).generate(Session(0), TITLED, "a note titled ab")
    assert generated.json_valid and not generated.schema_valid and generated.closed_early
    assert generated.problems[0] == "the token budget (4) ran out and the arguments were closed early"
    assert len(generated.problems) == 2


async def test_the_decoding_asked_of_the_engine_carries_the_mode_budget_and_schema_grammar():
    engine = ScriptedEngine(decoded('{"query": "taxes"}'), decoded('{"query": "taxes"}'))
    generator = ArgumentGenerator(engine, mode="prefill", max_tokens=32)
    first = await generator.generate(Session(0), SEARCH, "notes about taxes")
    second = await generator.generate(Session(0), SEARCH, "notes about taxes", mode="signature")
    (_, how), (_, other) = engine.decoded
    assert (how.form, how.max_tokens, how.opens_key, other.form) == ("prefill", 32, True, "signature")
    assert how.grammar and first.grammar == "schema" and (first.mode, second.mode) == ("prefill", "signature")


async def test_splice_mode_compiles_each_tool_block_once():
    engine = ScriptedEngine(*(decoded('{"query": "taxes"}') for _ in range(3)))
    generator = ArgumentGenerator(engine, mode="splice")
    for _ in range(3):
        await generator.generate(Session(0), SEARCH, "notes about taxes")
    assert engine.prepared == [["notes__search_notes"]]


async def test_splice_mode_with_a_cold_form_shows_an_uncompiled_tool_so_and_compiles_it_afterwards():
    engine = ScriptedEngine(*(decoded('{"query": "taxes"}') for _ in range(3)))
    generator = ArgumentGenerator(engine, mode="splice", cold="signature")
    first = await generator.generate(Session(0), SEARCH, "notes about taxes")
    assert first.mode == "signature" and engine.prepared == []
    assert [record.name for record in generator.pending.values()] == [SEARCH.name]
    assert await generator.compile_pending() == 1 and engine.prepared == [[SEARCH.name]] and not generator.pending
    second = await generator.generate(Session(0), SEARCH, "notes about taxes")
    third = await generator.generate(Session(0), SEARCH, "notes about taxes")
    assert (second.mode, third.mode) == ("splice", "splice") and engine.prepared == [[SEARCH.name]]
    assert [how.form for _, how in engine.decoded] == ["signature", "splice", "splice"]
    engine.deep.add(1)  # a session with history: its block would be prefilled, so the signature is shown
    engine.answers.append(decoded('{"query": "taxes"}'))
    assert (await generator.generate(Session(1), SEARCH, "notes about taxes")).mode == "signature"
    assert not generator.pending and engine.prepared == [[SEARCH.name]]


def test_an_unknown_argument_mode_is_a_config_error_naming_the_choices():
    assert check_mode("splice") == "splice"
    with pytest.raises(ConfigError, match=r"signature, splice, prefill.*'fast'"):
        check_mode("fast")


class RuntimeEngine(ScriptedEngine):
    """The `Engine` over the shared real runtime, decoding on this thread (no worker needed)."""

    def __init__(self, runtime: Runtime) -> None:
        super().__init__()
        self.runtime = runtime

    async def open_session(self) -> Session:
        return Session(self.runtime.open_session().seq)

    async def decode_arguments(self, session: Session, record: ToolRecord, query: str, how: Decoding) -> Decoded:
        steps = decode_steps(self.runtime, self.runtime.session(session.id), record, query, how)
        try:
            step = next(steps)
            while True:
                step = steps.send(self.runtime.append_each([step])[0])
        except StopIteration as done:
            return done.value


async def test_the_real_model_fills_the_city_from_the_request(gen_runtime: Runtime):
    gen_runtime.reset()
    engine = RuntimeEngine(gen_runtime)
    with anyio.fail_after(120):
        generated = await ArgumentGenerator(engine).generate(
            await engine.open_session(), WEATHER, "What is the weather in Paris?"
        )
    assert generated.arguments is not None and generated.arguments["city"] == "Paris", generated.text
    assert generated.schema_valid and generated.ungrounded == () and generated.n_tokens > 0
    decoded = json.loads(generated.text)  # what the model wrote, less the optional values the request never states
    kept = {name: value for name, value in decoded.items() if name not in generated.dropped}
    assert generated.trace()["arguments"] == generated.arguments == kept
    # no unit is named: the enum is left out of the grammar, and the trace says so
    assert "unit" not in decoded and generated.unstated == ("unit",) and generated.trace()["unstated"] == ["unit"]


REACTOR = tool(
    "simulate_reactor",
    {"reactor_type": {"type": "string"}, "fuel_type": {"type": "string"}, "power": {"type": "number"}},
    ["reactor_type", "fuel_type", "power"],
)
GRANT = tool(
    "grant_access",
    {"database_name": {"type": "string"}, "username": {"type": "string"}, "permission": {"type": "string"}},
    ["database_name", "username", "permission"],
)


async def generate_with_the_real_model(runtime: Runtime, record: ToolRecord, request: str) -> dict[str, Any]:
    runtime.reset()
    engine = RuntimeEngine(runtime)
    with anyio.fail_after(120):
        generated = await ArgumentGenerator(engine).generate(await engine.open_session(), record, request)
    assert generated.arguments is not None and generated.schema_valid, generated.text
    return generated.arguments


async def test_the_real_model_copies_a_whole_phrase_with_its_head_noun(gen_runtime: Runtime):
    request = "Run a simulation of a molten salt reactor using thorium fuel at a power of 12.5."
    arguments = await generate_with_the_real_model(gen_runtime, REACTOR, request)
    assert arguments == {"reactor_type": "molten salt reactor", "fuel_type": "thorium", "power": 12.5}


async def test_the_real_model_puts_a_value_under_the_parameter_it_names(gen_runtime: Runtime):
    request = "Grant read permission to the user 'dana' on the Postgres database."
    arguments = await generate_with_the_real_model(gen_runtime, GRANT, request)
    assert arguments == {"database_name": "Postgres", "username": "dana", "permission": "read"}


DRAFT = tool(
    "draft_message",
    {"user": {"type": "string"}, "subject": {"type": "string"}, "to": {"type": "string"}, "cc": {"type": "string"}},
    ["user"],
)


async def test_parameters_the_request_names_with_their_values_are_decoded_again_as_required_when_left_out():
    request = "draft as ann@x.com: to hr@x.com, cc tom@x.com, subject Sick day"
    engine = ScriptedEngine(
        decoded('{"user": "ann@x.com", "subject": "Sick day"}'),
        decoded('{"user": "ann@x.com", "subject": "Sick day", "to": "hr@x.com", "cc": "tom@x.com"}'),
    )
    generated = await ArgumentGenerator(engine).generate(Session(0), DRAFT, request)
    assert generated.arguments == {"user": "ann@x.com", "subject": "Sick day", "to": "hr@x.com", "cc": "tom@x.com"}
    second = engine.decoded[1][1].grammar
    assert second != engine.decoded[0][1].grammar and generated.n_tokens == 24  # both decodings counted
    # a second decoding that says no more of the request is not kept
    engine = ScriptedEngine(
        decoded('{"user": "ann@x.com", "subject": "Sick day"}'),
        decoded('{"user": "ann@x.com", "subject": "Sick day", "to": "boss@y.com", "cc": "z@y.com"}'),
    )
    generated = await ArgumentGenerator(engine).generate(Session(0), DRAFT, request)
    assert generated.arguments == {"user": "ann@x.com", "subject": "Sick day"}
    # nothing named and left out: one decoding
    engine = ScriptedEngine(decoded('{"user": "ann@x.com", "subject": "Sick day"}'))
    await ArgumentGenerator(engine).generate(Session(0), DRAFT, "draft as ann@x.com, subject Sick day")
    assert len(engine.decoded) == 1
