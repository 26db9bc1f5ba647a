"""Splice, recompute and prefill against the real model: exactness where it is promised, and blocks that
fail validation never spliced."""

from __future__ import annotations

import logging
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from nexus_gateway.engine.blocks import encode_block, open_block
from nexus_gateway.engine.compiler import compile_tools
from nexus_gateway.engine.policy import SplicePolicy
from nexus_gateway.engine.runtime import Runtime
from tests.engine.conftest import EMAIL, WEATHER, prefill_tool, request_logits, settings, use_store

HISTORY = 'Earlier request: send the report to Ann\nArguments: {"to": "ann@example.com"}\n'


def prefilled_reference(runtime: Runtime, *, history: str = "") -> np.ndarray:
    runtime.reset()
    state = runtime.open_session()
    if history:
        runtime.append_text(state, history, logits=False)
    prefill_tool(runtime, state, WEATHER)
    return request_logits(runtime, state)


def test_splice_at_zero_shift_gives_logits_identical_to_prefill(fresh: Runtime):
    compile_tools(fresh, [WEATHER, EMAIL])
    fresh.reset()
    state = fresh.open_session()
    placement = fresh.place_tool(state, WEATHER)
    assert (placement.mode, placement.recomputed) == ("splice", 0)
    spliced = request_logits(fresh, state)
    reference = prefilled_reference(fresh)
    assert np.array_equal(spliced, reference)
    fresh.reset()
    other = fresh.open_session()
    prefill_tool(fresh, other, EMAIL)
    assert not np.array_equal(request_logits(fresh, other), reference)  # the comparison can tell tools apart


def test_a_tool_line_compiled_by_the_reranker_is_spliced_by_the_signature_fill_and_reads_as_prefilled(
    fresh: Runtime, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    from nexus_gateway.engine.scoring import compile_scoring

    use_store(fresh, monkeypatch, tmp_path)  # a store of its own: no other test compiled the line before
    assert compile_scoring(fresh, [WEATHER]) == 1 and compile_scoring(fresh, [WEATHER]) == 0  # compiled once
    fresh.reset()
    state = fresh.open_session()
    placement = fresh.place_tool(state, WEATHER, form="signature")
    assert (placement.mode, placement.recomputed) == ("splice", 0)
    spliced = request_logits(fresh, state)
    fresh.reset()
    state = fresh.open_session()
    fresh.append(state, fresh.line_tokens(WEATHER)[0], logits=False)
    assert np.array_equal(spliced, request_logits(fresh, state))
    assert not np.array_equal(spliced, prefilled_reference(fresh))  # the line is not the full schema


def test_policy_prefill_path_is_bit_identical_to_plain_prefill(fresh: Runtime):
    compile_tools(fresh, [WEATHER])
    fresh.reset()
    state = fresh.open_session()
    fresh.append_text(state, HISTORY, logits=False)
    placement = fresh.place_tool(state, WEATHER)
    assert placement.mode == "prefill" and placement.reason.startswith("policy")
    assert np.array_equal(request_logits(fresh, state), prefilled_reference(fresh, history=HISTORY))


def test_a_shifted_splice_lands_at_the_live_depth_and_recomputes_the_policys_suffix(
    fresh: Runtime, monkeypatch: pytest.MonkeyPatch
):
    compile_tools(fresh, [WEATHER])
    monkeypatch.setattr(fresh.splicer, "policy", SplicePolicy(P=0, D=1000))
    fresh.reset()
    state = fresh.open_session()
    fresh.append_text(state, HISTORY, logits=False)
    depth = state.n_past - fresh.anchor
    n_tokens = len(fresh.tool_tokens(WEATHER)[0])
    placement = fresh.place_tool(state, WEATHER)
    assert placement.mode == "recompute"
    assert placement.recomputed == math.ceil(depth / 1000 * n_tokens)
    assert fresh.ctx.seq_range(state.seq) == (0, state.n_past - 1)
    spliced = request_logits(fresh, state)
    reference = prefilled_reference(fresh, history=HISTORY)
    assert int(np.argmax(spliced)) == int(np.argmax(reference))


def damage(path: Path, how: str, runtime: Runtime, tmp_path: Path) -> None:
    data = bytearray(path.read_bytes())
    if how == "flipped payload byte":
        data[-1000] ^= 0x10
    elif how == "flipped token id":
        data[130] ^= 0x01
    elif how == "truncated":
        del data[-4096:]
    elif how == "another model's block":
        # A real block of the same tool compiled by a context with another KV layout (another fingerprint).
        other = Runtime.load(settings(kv_type="f32", sessions=1), compiled_root=tmp_path / "other")
        try:
            report = compile_tools(other, [WEATHER])
            assert report.compiled == 1 and other.store is not None
            foreign = next(other.store.directory.glob("*.kvb"))
        finally:
            other.close()
        shutil.copyfile(foreign, path)
        return
    elif how == "header from another model":
        block = open_block(path, fingerprint=runtime.fingerprint)
        payload = bytes(block.buffer[block.payload_offset :])
        data = bytearray(encode_block("ee" * 32, block.header.key, block.header.anchor, list(block.tokens), payload))
        block.close()
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "how",
    ["flipped payload byte", "flipped token id", "truncated", "another model's block", "header from another model"],
)
def test_a_corrupt_or_foreign_block_is_never_spliced_and_the_text_is_prefilled(
    fresh: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, how: str
):
    use_store(fresh, monkeypatch, tmp_path / "compiled_schemas")
    compile_tools(fresh, [WEATHER])
    assert fresh.store is not None
    (path,) = fresh.store.directory.glob("*.kvb")
    fresh.reset()
    assert fresh.place_tool(fresh.open_session(), WEATHER).mode == "splice"  # intact, it would be spliced

    damage(path, how, fresh, tmp_path)
    fresh.reset()
    state = fresh.open_session()
    with caplog.at_level(logging.WARNING, logger="nexus_gateway.engine"):
        placement = fresh.place_tool(state, WEATHER)
    assert placement.mode == "prefill" and placement.reason.startswith("block rejected")
    assert any(path.name in record.getMessage() for record in caplog.records)
    assert np.array_equal(request_logits(fresh, state), prefilled_reference(fresh))
