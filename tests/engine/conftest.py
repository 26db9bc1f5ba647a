"""One real engine for the engine tests: the default Qwen2.5-Coder-0.5B, a small context, one thread.

The two-session `gen_runtime` that constrained decoding and generation share is in tests/conftest.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.config import ToolForm
from nexus_gateway.engine import DRAFT_TOKENS, Decoded, Decoding
from nexus_gateway.engine.decoding import decode_steps
from nexus_gateway.engine.runtime import Runtime, SessionState
from nexus_gateway.engine.settings import EngineSettings
from nexus_gateway.generation.grammar import GrammarPlan

WEATHER = ToolRecord(
    name="get_weather",
    server="",
    upstream_name="get_weather",
    description="Current weather for a city.",
    input_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
        "required": ["city"],
    },
)
EMAIL = ToolRecord(
    name="send_email",
    server="",
    upstream_name="send_email",
    description="Send an email to one recipient.",
    input_schema={
        "type": "object",
        "properties": {"to": {"type": "string", "format": "email"}, "subject": {"type": "string"}},
        "required": ["to", "subject"],
    },
)


def settings(**overrides: object) -> EngineSettings:
    return EngineSettings.model_validate({"n_ctx": 1024, "threads": 1, "sessions": 3, **overrides})


@pytest.fixture(scope="session")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    engine = Runtime.load(settings(), compiled_root=tmp_path_factory.mktemp("compiled_schemas"))
    yield engine
    engine.close()


@pytest.fixture
def fresh(runtime: Runtime) -> Runtime:
    """The shared runtime with an empty cache, so two runs land in the same cells (bit-comparable)."""
    runtime.reset()
    return runtime


def prefill_tool(runtime: Runtime, state: SessionState, record: ToolRecord) -> None:
    """The reference path: decode the tool text straight into the session, no splicer involved."""
    tokens, _ = runtime.tool_tokens(record)
    runtime.append(state, tokens, logits=False)


def request_logits(runtime: Runtime, state: SessionState, query: str = "What is the weather in Paris?") -> np.ndarray:
    logits = runtime.append_text(state, runtime.layout.request_text(query))
    assert logits is not None
    return logits


def use_store(runtime: Runtime, monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """Point the runtime at a private compiled_schemas folder for one test."""
    from nexus_gateway.engine.store import BlockStore

    store = BlockStore(root, runtime.fingerprint)
    monkeypatch.setattr(runtime, "store", store)
    monkeypatch.setattr(runtime.splicer, "blocks", store)


def decode_alone(
    rt: Runtime,
    state: SessionState,
    record: ToolRecord,
    query: str,
    plan: GrammarPlan,
    form: ToolForm,
    max_tokens: int,
    copied_only: tuple[str, ...] = (),
    draft_tokens: int = DRAFT_TOKENS,
) -> Decoded:
    """`decode_steps` driven alone, on this thread: each step decoded as it comes."""
    how = Decoding(
        grammar=plan.gbnf,
        opens_key=plan.opens_key,
        form=form,
        max_tokens=max_tokens,
        copied_only=copied_only,
        draft_tokens=draft_tokens,
    )
    steps = decode_steps(rt, state, record, query, how)
    try:
        step = next(steps)
        while True:
            step = steps.send(rt.append_each([step])[0])
    except StopIteration as done:
        return done.value
