"""Pinned tool definitions: what the host may see of each upstream tool, until a person approves a change.

A tool's full definition (title, description, input and output schema, annotations) is pinned the first
time the gateway sees it, keyed by (server, upstream tool name). When an upstream later lists a different
definition, the tool is *quarantined*: the host keeps seeing the pinned definition (`pinned`, the default)
or does not see the tool at all (`withhold`) until a person runs `nexus-gateway tools approve NAME`, which
pins the definition the gateway last saw. With `quarantine_new` a tool never pinned before is quarantined
too (and withheld: there is nothing approved to show).

The store is one JSON file (`pins.json` in the state directory) shared by running gateways and the CLI.
Every change is a read-modify-write under an advisory lock (`fcntl.flock`, POSIX; none elsewhere), so an
approval the CLI writes is never lost to a gateway's next write, and a gateway tells that another process
changed the file from its (inode, mtime, size) without reading it.

    {"format": 1, "tools": {SERVER: {TOOL: {"name": exposed name, "pinned": DEFINITION | null,
                                            "pinned_at": UTC time, "current": DEFINITION, "reason": ...,
                                            "seen_at": UTC time}}}}

`current`, `reason` and `seen_at` are there only while the tool is quarantined. The `descriptions.json`
ledger of earlier versions (description hashes only) is read, never written: a tool it knew whose
description no longer matches is quarantined as `unverified`.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import logging
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from nexus_gateway.errors import NexusError
from nexus_gateway.runtime.statefile import StateInvalid, load_json, save_json

try:
    import fcntl
except ImportError:  # Windows: no advisory lock; the last writer wins
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

QuarantineMode = Literal["pinned", "withhold"]
Reason = Literal["changed", "new", "unverified"]
FIELDS = ("title", "description", "inputSchema", "outputSchema", "annotations")
"""What a model sees of a tool besides its name: all of it is pinned."""
_FIELD_WORDS = {
    "title": "title",
    "description": "description",
    "inputSchema": "input schema",
    "outputSchema": "output schema",
    "annotations": "annotations",
}
_FORMAT = 1
_LEGACY_SEPARATOR = "__"


def definition_of(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The pinned part of an MCP Tool in wire form: its name and `FIELDS`, absent ones left out."""
    definition: dict[str, Any] = {"name": tool["name"]}
    for key in FIELDS:
        if tool.get(key) is not None:
            definition[key] = tool[key]
    return definition


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON (`True` and `1` differ, key order does not)."""
    return _canonical(a) == _canonical(b)


def _strip_descriptions(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _strip_descriptions(item) for key, item in value.items() if key != "description"}
    if isinstance(value, list):
        return [_strip_descriptions(item) for item in value]
    return value


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass(frozen=True)
class Quarantine:
    """A tool the host does not see as it is now, and why."""

    server: str
    tool: str
    """The upstream's name for the tool."""
    name: str
    """The name the gateway exposes."""
    reason: Reason
    pinned: dict[str, Any] | None
    """The approved definition; `None` for a tool never approved."""
    current: dict[str, Any]
    """The definition the upstream lists now (as last seen)."""
    seen_at: str

    @property
    def changes(self) -> tuple[str, ...]:
        """What differs from the pinned definition, in words (`description`, `parameter descriptions`, ...)."""
        if self.pinned is None:
            return ()
        words = []
        for key in FIELDS:
            before, after = self.pinned.get(key), self.current.get(key)
            if _same(before, after):
                continue
            if key == "inputSchema" and _same(_strip_descriptions(before), _strip_descriptions(after)):
                words.append("parameter descriptions")
            else:
                words.append(_FIELD_WORDS[key])
        return tuple(words)

    @property
    def why(self) -> str:
        """One sentence a person (or a model) can act on."""
        if self.reason == "new":
            what = "it is new and tools never seen before need approval here (quarantine_new_servers)"
        elif self.reason == "unverified":
            what = "its description differs from the one an earlier nexus-gateway version first saw"
        else:
            what = f"its {', '.join(self.changes) or 'definition'} changed since it was approved"
        return f"{self.name} is quarantined: {what} (seen {self.seen_at})."

    def diff(self) -> str:
        """A unified diff of the pinned definition against the current one, as indented JSON."""

        def lines(definition: dict[str, Any] | None) -> list[str]:
            if definition is None:
                return []
            return json.dumps(definition, indent=2, sort_keys=True, ensure_ascii=False).splitlines(keepends=True)

        before = "(nothing approved)" if self.pinned is None else "pinned"
        return "".join(
            difflib.unified_diff(
                lines(self.pinned), lines(self.current), f"{self.name} ({before})", f"{self.name} (now)"
            )
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "server": self.server,
            "tool": self.tool,
            "reason": self.reason,
            "changes": list(self.changes),
            "seen_at": self.seen_at,
        }


@dataclass(frozen=True)
class Sighting:
    """What the host may see of one listed tool."""

    shown: dict[str, Any] | None
    """The definition to serve (the pinned one while quarantined), or `None`: the tool is withheld."""
    quarantine: Quarantine | None = None


def _validate(data: Any) -> dict[str, dict[str, dict[str, Any]]]:
    if not isinstance(data, dict) or data.get("format") != _FORMAT or not isinstance(data.get("tools"), dict):
        raise StateInvalid("not a format-1 pin store")
    for server, tools in data["tools"].items():
        if not isinstance(tools, dict):
            raise StateInvalid(f"server {server!r} is not an object")
        for tool, entry in tools.items():
            if not (
                isinstance(entry, dict)
                and isinstance(entry.get("name"), str)
                and isinstance(entry.get("pinned"), dict | None)
                and isinstance(entry.get("current", {}), dict)
                and (entry.get("pinned") is not None or "current" in entry)
                and entry.get("reason", "changed") in ("changed", "new", "unverified")
            ):
                raise StateInvalid(f"entry {server!r}/{tool!r} is malformed")
    valid: dict[str, dict[str, dict[str, Any]]] = data["tools"]
    return valid


def _validate_legacy(data: Any) -> dict[str, str]:
    if not isinstance(data, dict) or not all(isinstance(value, str) for value in data.values()):
        raise StateInvalid("not an object of description hashes")
    return data


class PinStore:
    """Pinned definitions per (server, tool), in memory, or persisted in `path` when given."""

    def __init__(
        self,
        path: Path | None = None,
        *,
        mode: QuarantineMode = "pinned",
        quarantine_new: bool = False,
        legacy_path: Path | None = None,
    ) -> None:
        self.path = path
        self.mode = mode
        self.quarantine_new = quarantine_new
        self._tools: dict[str, dict[str, dict[str, Any]]] = {}
        self._known: tuple[int, int, int] | None = None
        self._legacy: dict[str, str] = {}
        if legacy_path is not None:
            self._legacy = load_json(legacy_path, _validate_legacy) or {}
        self._reload_if_changed()

    # -- what the gateway does ------------------------------------------------------------------

    def observe_server(self, server: str, tools: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Sighting]:
        """Judge a server's listing, `(exposed name, MCP Tool in wire form)` each: pin what is new (unless
        new tools need approval), quarantine what changed, release what changed back. One write at most."""
        with self._locked():
            self._reload_if_changed()
            entries = self._tools.setdefault(server, {})
            dirty = False
            sightings = []
            for name, tool in tools:
                old = entries.get(tool["name"])
                entry = self._judge(server, name, definition_of(tool), old)
                if old is None or not _same(old, entry):
                    entries[tool["name"]] = entry
                    dirty = True
                sightings.append(self._sighting(server, tool["name"], entry))
            if not entries:
                del self._tools[server]
            if dirty:
                self._save()
        return sightings

    def changed_on_disk(self) -> bool:
        """Another process (the CLI approving a tool) wrote the store since this one last read or wrote it."""
        return self.path is not None and self._signature() != self._known

    # -- what a person does ---------------------------------------------------------------------

    def quarantined(self) -> list[Quarantine]:
        """Every quarantined tool the store holds, by exposed name."""
        self._reload_if_changed()
        found = [
            quarantine
            for server, entries in self._tools.items()
            for tool in entries
            if (quarantine := self._sighting(server, tool, entries[tool]).quarantine) is not None
        ]
        return sorted(found, key=lambda quarantine: quarantine.name)

    def approve(
        self, names: Iterable[str] = (), *, servers: Iterable[str] = (), every: bool = False
    ) -> list[Quarantine]:
        """Pin the last-seen definition of the quarantined tools named (exposed names), of every quarantined
        tool of `servers`, or of all (`every`); return what was approved. Raises `NexusError` for a name that
        is not quarantined, or when the store cannot be written (then nothing is approved)."""
        wanted, wanted_servers = set(names), set(servers)
        with self._locked():
            self._reload_if_changed()
            pending = {quarantine.name: quarantine for quarantine in self.quarantined()}
            unknown = sorted(wanted - pending.keys())
            if unknown:
                listed = ", ".join(pending) or "none"
                raise NexusError(f"not quarantined: {', '.join(unknown)} (quarantined now: {listed})")
            chosen = [q for q in pending.values() if every or q.name in wanted or q.server in wanted_servers]
            for quarantine in chosen:
                self._tools[quarantine.server][quarantine.tool] = {
                    "name": quarantine.name,
                    "pinned": quarantine.current,
                    "pinned_at": _now(),
                }
            if chosen and not self._save():
                self._known = None  # read the file again: nothing was approved
                raise NexusError(f"could not write the pin store {self.path}; nothing was approved")
        return chosen

    # -- inside ---------------------------------------------------------------------------------

    def _judge(self, server: str, name: str, definition: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
        """The entry after seeing `definition`."""
        if old is None:
            legacy = self._legacy.get(f"{server}{_LEGACY_SEPARATOR}{definition['name']}")
            description = str(definition.get("description") or "")
            if legacy is not None and legacy != hashlib.sha256(description.encode()).hexdigest():
                return self._quarantined(name, None, definition, "unverified")
            if self.quarantine_new:
                return self._quarantined(name, None, definition, "new")
            return {"name": name, "pinned": definition, "pinned_at": _now()}
        pinned = old.get("pinned")
        if pinned is not None and _same(pinned, definition):
            return {"name": name, "pinned": pinned, "pinned_at": old.get("pinned_at", "")}
        if "current" in old and _same(old["current"], definition):
            return old | {"name": name}
        reason: Reason = "changed" if pinned is not None else old.get("reason", "new")
        entry = self._quarantined(name, pinned, definition, reason)
        if "pinned_at" in old:
            entry["pinned_at"] = old["pinned_at"]
        return entry

    @staticmethod
    def _quarantined(
        name: str, pinned: dict[str, Any] | None, current: dict[str, Any], reason: Reason
    ) -> dict[str, Any]:
        return {"name": name, "pinned": pinned, "current": current, "reason": reason, "seen_at": _now()}

    def _sighting(self, server: str, tool: str, entry: dict[str, Any]) -> Sighting:
        if "current" not in entry:
            return Sighting(entry["pinned"])
        quarantine = Quarantine(
            server,
            tool,
            entry["name"],
            entry.get("reason", "changed"),
            entry.get("pinned"),
            entry["current"],
            entry.get("seen_at", ""),
        )
        shown = quarantine.pinned if self.mode == "pinned" else None
        return Sighting(shown, quarantine)

    def _signature(self) -> tuple[int, int, int] | None:
        if self.path is None:
            return None
        try:
            stat = self.path.stat()
        except OSError:
            return None
        return (stat.st_ino, stat.st_mtime_ns, stat.st_size)

    def _reload_if_changed(self) -> bool:
        signature = self._signature()
        if self.path is None or signature == self._known:
            return False
        self._tools = load_json(self.path, _validate) or {}
        self._known = self._signature()
        return True

    def _save(self) -> bool:
        if self.path is None:
            return True
        saved = save_json(self.path, {"format": _FORMAT, "tools": self._tools})
        if saved:
            self._known = self._signature()
        return saved

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the store's advisory lock (a `.lock` file beside it) when the platform and directory allow."""
        if self.path is None or fcntl is None:
            yield
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path.with_name(f"{self.path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            yield  # an unwritable state directory: nothing will be saved, so nothing to serialize
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock
