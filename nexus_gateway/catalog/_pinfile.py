"""The pin store's files: `pins.json` and its copy `pins.json.bak`, written in turn, read without trusting either.

Every write goes to `pins.json` first, then to `pins.json.bak`, each atomically and flushed to disk, with a
`generation` one higher than the last. So when `pins.json` is damaged (truncated, emptied, garbage, deleted,
replaced by a symbolic link or a directory, unreadable), the copy holds the last good state, at worst one
write older (when the second write failed). Reading says which of three things a file is: sound (`Stored`),
missing (`None`), or there but unusable (`Unusable`, with why in words); what to do then is the store's call.

    {"format": 1, "generation": N, "tools": {...}, "recovered": {"at": UTC time, "why": words} (optional)}
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexus_gateway.runtime.statefile import StateUnusable, move_aside, read_regular, save_bytes

FORMAT = 1
REASONS = ("changed", "new", "unverified", "lost")


class Unusable(Exception):
    """A pin file that is there but cannot be trusted (`reason` says why)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Stored:
    """One sound state of the store."""

    tools: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    generation: int = 0
    recovered: dict[str, str] | None = None
    """Set when the store was rebuilt from a copy after damage; cleared by a person's approval."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"format": FORMAT, "generation": self.generation, "tools": self.tools}
        if self.recovered is not None:
            data["recovered"] = self.recovered
        return data


def _entry_ok(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("name"), str)
        and isinstance(entry.get("pinned"), dict | None)
        and isinstance(entry.get("current", {}), dict)
        and (entry.get("pinned") is not None or "current" in entry)
        and entry.get("reason", "changed") in REASONS
    )


def parse(raw: bytes) -> Stored:
    """The store in `raw`, or `Unusable` saying what is wrong with it."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        what = "is empty" if not raw.strip() else f"is not JSON ({exc})"
        raise Unusable(what[:200]) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("tools"), dict):
        raise Unusable("is not a format-1 pin store")
    generation, recovered = data.get("generation", 0), data.get("recovered")
    if not isinstance(generation, int) or isinstance(generation, bool) or generation < 0:
        raise Unusable("has a malformed generation")
    if recovered is not None and not (
        isinstance(recovered, dict) and all(isinstance(value, str) for value in recovered.values())
    ):
        raise Unusable("has a malformed recovery note")
    for server, tools in data["tools"].items():
        if not isinstance(tools, dict):
            raise Unusable(f"has a malformed server {server!r}")
        for tool, entry in tools.items():
            if not _entry_ok(entry):
                raise Unusable(f"has a malformed entry {server!r}/{tool!r}")
    return Stored(data["tools"], generation, recovered)


class PinFiles:
    """`pins.json` and `pins.json.bak` beside it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.backup = path.with_name(f"{path.name}.bak")

    def signature(self) -> tuple[int, int, int] | None:
        """(inode, mtime, size) of `pins.json` itself (a symbolic link is not followed), None when absent."""
        try:
            stat = os.lstat(self.path)
        except OSError:
            return None
        return (stat.st_ino, stat.st_mtime_ns, stat.st_size)

    def read(self, path: Path) -> Stored | None:
        """The sound store in `path`, `None` when nothing is there; raises `Unusable` otherwise."""
        try:
            raw = read_regular(path)
        except StateUnusable as exc:
            raise Unusable(exc.reason) from None
        return None if raw is None else parse(raw)

    def exists(self, path: Path) -> bool:
        return os.path.lexists(path)

    def set_aside(self, path: Path, reason: str) -> None:
        """Keep a damaged file for inspection (`<name>.corrupt-<time>`); it is never read again."""
        if self.exists(path):
            move_aside(path, reason, then="go on from the last good copy")

    def write(self, stored: Stored) -> bool:
        """Write `pins.json`, then its copy. True when `pins.json` was written (the copy may lag one write)."""
        data = json.dumps(stored.to_json(), separators=(",", ":")).encode("utf-8")
        if not save_bytes(self.path, data, durable=True):
            return False
        save_bytes(self.backup, data, durable=True)
        return True
