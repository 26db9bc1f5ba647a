"""Sessions are sequences of one context: independent of each other, reusable, and owned by one thread."""

from __future__ import annotations

import threading

import anyio
import numpy as np
import pytest

from nexus_gateway.engine import Decoding, Turn
from nexus_gateway.engine.runtime import Runtime
from nexus_gateway.engine.worker import LocalEngine
from nexus_gateway.errors import EngineError
from nexus_gateway.generation.grammar import grammar_for
from tests.engine.conftest import EMAIL, WEATHER, request_logits, settings

TEXT_X = 'Earlier request: what is the capital of France\nArguments: {"q": "France"}\n'
TEXT_Y = 'Earlier request: translate goodbye into German\nArguments: {"text": "bye"}\n'


def _same_length(runtime: Runtime, a: str, b: str) -> tuple[list[int], list[int]]:
    x, y = runtime.model.tokenize(a, special=True), runtime.model.tokenize(b, special=True)
    n = min(len(x), len(y))
    assert x[:n] != y[:n]
    return x[:n], y[:n]


def _session_a_beside(runtime: Runtime, neighbour: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Session A's request logits while session B (interleaved with it) holds `neighbour`; and B's."""
    runtime.reset()
    a, b = runtime.open_session(), runtime.open_session()
    runtime.append_text(a, "Earlier request: hello\nArguments: {}\n", logits=False)
    runtime.append(b, neighbour, logits=False)
    runtime.place_tool(a, WEATHER)
    runtime.place_tool(b, EMAIL)
    logits_a = request_logits(runtime, a)
    logits_b = request_logits(runtime, b, "Mail Bob about lunch")
    return logits_a, logits_b


def test_several_sessions_in_one_context_stay_independent(fresh: Runtime):
    x, y = _same_length(fresh, TEXT_X, TEXT_Y)
    a_beside_x, b_with_x = _session_a_beside(fresh, x)
    a_beside_y, b_with_y = _session_a_beside(fresh, y)
    assert not np.array_equal(b_with_x, b_with_y)  # what B holds does change B ...
    assert np.array_equal(a_beside_x, a_beside_y)  # ... and never A, down to the last bit


def test_a_closed_session_frees_its_sequence_for_the_next_one(fresh: Runtime):
    sessions = [fresh.open_session() for _ in range(3)]
    with pytest.raises(EngineError, match="sessions are in use"):
        fresh.open_session()
    fresh.append_text(sessions[1], TEXT_X, logits=False)
    fresh.close_session(sessions[1])
    again = fresh.open_session()
    assert again.seq == sessions[1].seq and again.n_past == fresh.anchor
    assert fresh.ctx.seq_range(again.seq) == (0, fresh.anchor - 1)


def test_the_context_refuses_calls_from_a_thread_that_does_not_own_it(runtime: Runtime):
    errors: list[BaseException] = []

    def intruder() -> None:
        try:
            runtime.ctx.seq_range(0)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=intruder)
    thread.start()
    thread.join()
    assert len(errors) == 1 and isinstance(errors[0], RuntimeError)


@pytest.mark.anyio
async def test_local_engine_runs_every_job_on_its_one_worker_thread(tmp_path):
    with anyio.fail_after(120):
        async with LocalEngine(settings(sessions=2), compiled_root=tmp_path) as engine:
            report = await engine.compile([WEATHER])
            session = await engine.open_session()
            plan = grammar_for(WEATHER.input_schema)
            how = Decoding(grammar=plan.gbnf, opens_key=True, form="splice", max_tokens=32)
            decoded = await engine.decode_arguments(session, WEATHER, "weather in Oslo", how)
            await engine.append_turn(session, Turn("weather in Oslo", decoded.text), max_depth=256)
            depth = await engine.depth(session)
            threads = {await engine.run(lambda rt: threading.get_ident()) for _ in range(3)}
            await engine.close_session(session)
    assert report.compiled == 1 and decoded.placement is not None and decoded.placement.mode == "splice"
    assert decoded.complete and depth > 0
    assert len(threads) == 1 and threading.get_ident() not in threads


@pytest.mark.anyio
async def test_an_engine_that_cannot_load_its_model_raises_a_user_error(tmp_path):
    with anyio.fail_after(30), pytest.raises(EngineError, match="model file not found"):
        async with LocalEngine(settings(model=str(tmp_path / "missing.gguf")), compiled_root=tmp_path):
            pass


def test_the_engine_splices_by_the_policy_shipped_for_its_model_when_none_was_calibrated_here(runtime: Runtime):
    from nexus_gateway.engine.models import DEFAULT_MODEL, MODELS

    assert runtime.store is not None and not (runtime.store.directory / "splice_policy.json").exists()
    assert runtime.policy is MODELS[DEFAULT_MODEL].splice


def test_teacher_forced_rows_match_a_token_by_token_decode_across_batches(fresh: Runtime):
    """`decode_all` returns one row of logits after every token, in batches of `n_outputs` rows: more tokens
    than one batch holds still give each row what decoding up to that token gives."""
    ctx = fresh.ctx
    tokens = fresh.model.tokenize(TEXT_X + TEXT_Y + TEXT_X + TEXT_Y)
    assert len(tokens) > ctx.settings.n_outputs > ctx.settings.n_seq_max
    state = fresh.open_session()
    (rows,) = ctx.decode_all([(state.seq, tokens, state.n_past)])
    assert rows.shape == (len(tokens), fresh.model.info.n_vocab)
    other = fresh.open_session()
    for i, token in enumerate(tokens):
        one = ctx.decode(other.seq, [token], other.n_past + i)
        assert one is not None
        second, first = np.sort(one)[-2:]
        if first - second > 0.1:  # batch size changes the last bits: a near-tie may go either way
            assert int(np.argmax(rows[i])) == int(np.argmax(one)), f"row {i}"
        assert np.corrcoef(rows[i], one)[0, 1] > 0.999


@pytest.mark.parametrize("skip", [3, 40])
def test_rows_skipped_are_decoded_for_their_context_and_the_rest_match_the_full_rows(fresh: Runtime, skip: int):
    ctx = fresh.ctx
    tokens = fresh.model.tokenize(TEXT_X + TEXT_Y + TEXT_X)
    assert skip < len(tokens) and (skip < ctx.settings.n_outputs or skip > ctx.settings.n_outputs)
    (every,) = ctx.decode_all([(fresh.open_session().seq, tokens, fresh.anchor)])
    (rows,) = ctx.decode_all([(fresh.open_session().seq, tokens, fresh.anchor)], skip=skip)
    assert rows.shape == (len(tokens) - skip, fresh.model.info.n_vocab)
    for i, row in enumerate(rows):
        assert np.corrcoef(row, every[skip + i])[0, 1] > 0.999, f"row {skip + i}"


def test_steps_of_several_sequences_decoded_together_give_each_the_rows_it_gives_alone(fresh: Runtime):
    """`decode_all` with a step a sequence: one batch for all (split at `n_outputs` rows), each step's rows those
    of decoding it alone, whatever the other steps hold."""
    ctx = fresh.ctx
    first, second = fresh.model.tokenize(TEXT_X + TEXT_Y + TEXT_X), fresh.model.tokenize(TEXT_Y)
    assert len(first) + len(second) > ctx.settings.n_outputs
    seqs = [fresh.open_session().seq for _ in range(2)]
    together = ctx.decode_all(
        [(seq, toks, fresh.anchor) for seq, toks in zip(seqs, (first, second), strict=True)], skip=2
    )
    assert [rows.shape[0] for rows in together] == [len(first) - 2, len(second) - 2]
    for seq, toks, rows in zip(seqs, (first, second), together, strict=True):
        ctx.seq_rm(seq, fresh.anchor, -1)
        (alone,) = ctx.decode_all([(seq, toks, fresh.anchor)], skip=2)
        for i, row in enumerate(rows):
            assert np.corrcoef(row, alone[i])[0, 1] > 0.999, f"row {i + 2}"


def test_a_fork_holds_what_its_session_holds_and_closing_it_leaves_the_session_as_it_was(fresh: Runtime):
    fresh.reset()
    session = fresh.open_session()
    fresh.append_text(session, TEXT_X, logits=False)
    held = fresh.ctx.seq_range(session.seq)
    fork = fresh.fork_session(session)
    assert fork.seq != session.seq and fork.n_past == session.n_past
    fresh.place_tool(session, WEATHER)
    fresh.place_tool(fork, WEATHER)
    in_session, in_fork = request_logits(fresh, session), request_logits(fresh, fork)
    assert np.allclose(in_session, in_fork, atol=1e-3) and in_session.argmax() == in_fork.argmax()  # one history
    fresh.rewind(session, held[1] + 1)
    fresh.close_session(fork)
    assert fresh.ctx.seq_range(session.seq) == held and fresh.ctx.seq_range(fork.seq) == (-1, -1)
    alone = fresh.open_session()
    fresh.append_text(alone, TEXT_X, logits=False)
    fresh.place_tool(session, WEATHER)
    fresh.place_tool(alone, WEATHER)
    in_session, alone_logits = request_logits(fresh, session), request_logits(fresh, alone)
    assert np.allclose(in_session, alone_logits, atol=1e-3)  # the fork took nothing from the session
