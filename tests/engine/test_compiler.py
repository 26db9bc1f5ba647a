"""The compiler: one block per tool, incremental, documented on disk."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from nexus_gateway.engine.compiler import compile_tools
from nexus_gateway.engine.runtime import Runtime
from nexus_gateway.evals.dataset import load_tools, tool_records
from tests.engine.conftest import EMAIL, WEATHER, use_store


def test_compile_is_incremental_and_recompiles_only_what_changed(
    fresh: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    use_store(fresh, monkeypatch, tmp_path / "compiled_schemas")
    first = compile_tools(fresh, [WEATHER, EMAIL])
    assert (first.compiled, first.skipped) == (2, 0) and first.bytes > 0
    second = compile_tools(fresh, [WEATHER, EMAIL])
    assert (second.compiled, second.skipped) == (0, 2)
    changed = replace(EMAIL, description="Send an email to one or more recipients.")
    third = compile_tools(fresh, [WEATHER, changed])
    assert (third.compiled, third.skipped) == (1, 1)
    assert fresh.store is not None
    assert len(list(fresh.store.directory.glob("*.kvb"))) == 3
    assert (tmp_path / "compiled_schemas" / "README.md").read_text().startswith("# compiled_schemas")


def test_a_corrupt_block_is_compiled_again(fresh: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    use_store(fresh, monkeypatch, tmp_path / "compiled_schemas")
    compile_tools(fresh, [WEATHER])
    assert fresh.store is not None
    (path,) = fresh.store.directory.glob("*.kvb")
    path.write_bytes(path.read_bytes()[:-10])
    report = compile_tools(fresh, [WEATHER])
    assert (report.compiled, report.replaced, report.skipped) == (1, 1, 0)
    assert compile_tools(fresh, [WEATHER]).skipped == 1


def test_tools_json_names_are_kept_exactly_as_given(tmp_path: Path):
    path = tmp_path / "tools.json"
    path.write_text('[{"name": "a.b c", "inputSchema": {"type": "object"}}, {"name": "t", "server": "s"}]')
    assert list(tool_records(load_tools(path), namespaced=True)) == ["a.b c", "s__t"]
    assert list(tool_records(load_tools(path))) == ["a.b c", "t"]


def test_a_schema_is_cold_until_compiled_and_again_in_a_session_too_deep_to_splice_into(
    fresh: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    use_store(fresh, monkeypatch, tmp_path / "compiled_schemas")
    state = fresh.open_session()
    assert fresh.cold_schema(state, WEATHER) == "uncompiled"
    compile_tools(fresh, [WEATHER])
    assert fresh.cold_schema(state, WEATHER) is None  # depth 0: a splice is exact
    deep = fresh.open_session()
    fresh.append_text(deep, "Earlier request: hello\nArguments: {}\n", logits=False)
    assert fresh.splicer.policy.D == 1 and fresh.cold_schema(deep, WEATHER) == "deep"
    assert fresh.cold_schema(deep, EMAIL) == "deep"  # not compiled either, but its block would not be used here
    monkeypatch.setattr(fresh, "store", None)
    assert fresh.cold_schema(fresh.open_session(), WEATHER) == "uncompiled"  # no store: always a full prefill
