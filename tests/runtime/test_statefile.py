"""State files: atomic writes, bad files moved aside, unwritable directories only warn."""

from __future__ import annotations

from pathlib import Path

import pytest

from nexus_gateway.runtime.statefile import StateInvalid, load_json, save_json


def _mapping(value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        raise StateInvalid(f"expected an object, got {type(value).__name__}")
    return {str(k): str(v) for k, v in value.items()}


def test_saved_state_loads_back(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "state.json"
    assert save_json(path, {"a": "b"})
    assert load_json(path, _mapping) == {"a": "b"}


def test_missing_state_reads_as_none(tmp_path: Path) -> None:
    assert load_json(tmp_path / "absent.json", _mapping) is None


@pytest.mark.parametrize("content", [b"[1, 2]", b"{not json", b"\xff\xfe\x00garbage"])
def test_bad_state_is_moved_aside_and_reads_as_none(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(content)
    assert load_json(path, _mapping) is None
    assert not path.exists()
    aside = list(tmp_path.glob("state.json.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == content


def test_unwritable_state_directory_is_a_warning_not_an_error(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert save_json(blocker / "state.json", {"a": 1}) is False
    assert "could not write state file" in caplog.text
    assert blocker.read_text() == "not a directory"


def test_state_is_written_as_compact_json(tmp_path: Path) -> None:
    """Indenting turns off the json module's C encoder, and the pin store (all the tools' schemas) is written
    once per upstream listing: compact JSON is what keeps a start with dozens of upstreams off the event loop."""
    path = tmp_path / "state.json"
    assert save_json(path, {"tools": {"a": {"inputSchema": {"type": "object"}}}, "format": 1})
    assert path.read_bytes() == b'{"format":1,"tools":{"a":{"inputSchema":{"type":"object"}}}}'
