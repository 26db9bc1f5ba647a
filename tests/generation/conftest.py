"""One real engine (the default Qwen2.5-Coder-0.5B, a small context) for the generation tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.config import ToolForm
from nexus_gateway.engine import Decoded, Decoding
from nexus_gateway.engine.decoding import decode_steps
from nexus_gateway.engine.runtime import Runtime, SessionState
from nexus_gateway.generation.grammar import GrammarPlan
from tests.engine.conftest import settings


@pytest.fixture(scope="session")
def gen_runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    engine = Runtime.load(settings(sessions=2), compiled_root=tmp_path_factory.mktemp("compiled_schemas"))
    yield engine
    engine.close()


def decode_alone(
    rt: Runtime, state: SessionState, record: ToolRecord, query: str, plan: GrammarPlan, form: ToolForm, max_tokens: int
) -> Decoded:
    """`decode_steps` driven alone, on this thread: each step decoded as it comes."""
    how = Decoding(grammar=plan.gbnf, opens_key=plan.opens_key, form=form, max_tokens=max_tokens)
    steps = decode_steps(rt, state, record, query, how)
    try:
        step = next(steps)
        while True:
            step = steps.send(rt.append_each([step])[0])
    except StopIteration as done:
        return done.value
