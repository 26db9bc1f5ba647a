"""Pinned tool definitions: what the host may see of each upstream tool, until a person approves a change.

A tool's full definition (title, description, input and output schema, annotations) is pinned the first
time the gateway sees it, keyed by (server, upstream tool name). When an upstream later lists a different
definition, the tool is *quarantined*: the host keeps seeing the pinned definition (`pinned`, the default)
or does not see the tool at all (`withhold`) until a person runs `nexus-gateway tools approve NAME`, which
pins the definition the gateway last saw. With `quarantine_new` a tool never pinned before is quarantined
too (and withheld: there is nothing approved to show).

The store is one JSON file (`pins.json` in the state directory) shared by running gateways and the CLI,
with a copy (`pins.json.bak`) written after it (`_pinfile.py`). Every change is a read-modify-write under an
advisory lock (`fcntl.flock`, POSIX; none elsewhere), so an approval the CLI writes is never lost to a
gateway's next write, and a gateway tells that another process changed the file from its (inode, mtime,
size) without reading it.

    {"format": 1, "generation": N, "tools": {SERVER: {TOOL: {"name": exposed name, "pinned": DEFINITION | null,
                                            "pinned_at": UTC time, "current": DEFINITION, "reason": ...,
                                            "seen_at": UTC time}}},
     "recovered": {"at": UTC time, "why": words}}

`current`, `reason` and `seen_at` are there only while the tool is quarantined. The `descriptions.json`
ledger of earlier versions (description hashes only) is read, never written: a tool it knew whose
description no longer matches is quarantined as `unverified`.

Trust fails closed. When `pins.json` is damaged (at start, or while a gateway serves: it looks every
`PIN_POLL_SECONDS`), it is set aside and the store goes on from the newest good copy it has (`pins.json.bak`,
or what this process last read or wrote); with none, from nothing. Either way the store is *degraded*
(`trust`, `recovered`: shown by /healthz, the dashboard and `nexus-gateway tools`) until a person approves
with `tools approve`: meanwhile a tool the copy holds no approval for is quarantined as `lost` (withheld),
never pinned afresh. A definition approved is never replaced but by a person's approval, and that approval
names the definition reviewed (`Quarantine.hash`): if the upstream changed it since, it is refused.
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

from nexus_gateway.catalog._pinfile import PinFiles, Stored, Unusable
from nexus_gateway.errors import NexusError
from nexus_gateway.runtime.statefile import StateInvalid, load_json

try:
    import fcntl
except ImportError:  # Windows: no advisory lock; the last writer wins
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

QuarantineMode = Literal["pinned", "withhold"]
Reason = Literal["changed", "new", "unverified", "lost"]
FIELDS = ("title", "description", "inputSchema", "outputSchema", "annotations")
"""What a model sees of a tool besides its name: all of it is pinned."""
_FIELD_WORDS = {
    "title": "title",
    "description": "description",
    "inputSchema": "input schema",
    "outputSchema": "output schema",
    "annotations": "annotations",
}
_LEGACY_SEPARATOR = "__"
_UNREAD = (-1, -1, -1)
"""A file signature no file has: the store is read on its next use."""
HASH_CHARS = 16
"""Hex digits of a definition's hash shown to a person and asked back with an approval (64 bits)."""


def definition_of(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The pinned part of an MCP Tool in wire form: its name and `FIELDS`, absent ones left out."""
    definition: dict[str, Any] = {"name": tool["name"]}
    for key in FIELDS:
        if tool.get(key) is not None:
            definition[key] = tool[key]
    return definition


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def definition_hash(definition: Mapping[str, Any]) -> str:
    """The hash of a definition's canonical form (sorted keys): what an approval names (`HASH_CHARS` of it)."""
    return hashlib.sha256(_canonical(definition).encode("utf-8", "surrogatepass")).hexdigest()


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
    def hash(self) -> str:
        """The hash of the definition the upstream lists now (`HASH_CHARS` hex digits): approve with it."""
        return definition_hash(self.current)[:HASH_CHARS]

    def matches(self, reviewed: str) -> bool:
        """Whether `reviewed` (a hash a person was shown) names the current definition."""
        given = reviewed.strip().lower()
        return len(given) >= HASH_CHARS and definition_hash(self.current).startswith(given)

    @property
    def why(self) -> str:
        """One sentence a person (or a model) can act on."""
        if self.reason == "lost":
            what = "the pin store was damaged and no good copy of it holds an approval for it"
        elif self.reason == "new":
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
            "hash": self.hash,
        }


@dataclass(frozen=True)
class Sighting:
    """What the host may see of one listed tool."""

    shown: dict[str, Any] | None
    """The definition to serve (the pinned one while quarantined), or `None`: the tool is withheld."""
    quarantine: Quarantine | None = None


def _validate_legacy(data: Any) -> dict[str, str]:
    if not isinstance(data, dict) or not all(isinstance(value, str) for value in data.values()):
        raise StateInvalid("not an object of description hashes")
    return data


@dataclass(frozen=True)
class Trust:
    """Whether the store's approvals can be relied on: `ok`, or `degraded` since `since` and why."""

    state: Literal["ok", "degraded"]
    why: str | None = None
    since: str | None = None

    def to_json(self) -> dict[str, str]:
        if self.state == "ok":
            return {"state": "ok"}
        return {"state": "degraded", "why": self.why or "", "since": self.since or ""}


class ApprovalMismatch(NexusError):
    """The definition a person reviewed is not the one the upstream lists now: nothing was approved."""


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
        self._generation = 0
        self._loaded = False
        """Whether this process holds a sound state of the store (read, written or restored)."""
        self.recovered: dict[str, str] | None = None
        """Set while the store runs on a copy after damage (see `trust`)."""
        self._files = None if path is None else PinFiles(path)
        self._known: tuple[int, int, int] | None = _UNREAD
        self._holding = 0
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
                sighting = self._sighting(server, tool["name"], entry)
                if sighting.quarantine is None:  # served as the upstream lists it: its key order, every start
                    sighting = Sighting(definition_of(tool))
                sightings.append(sighting)
            if not entries:
                del self._tools[server]
            if dirty:
                self._save()
        return sightings

    def changed_on_disk(self) -> bool:
        """Another process (the CLI approving a tool) wrote the store since this one last read or wrote it,
        or the file was damaged, replaced or removed."""
        return self._files is not None and self._files.signature() != self._known

    @property
    def trust(self) -> Trust:
        """`degraded` from the moment the store was found damaged until a person approves (`approve`), and
        while a shared store cannot confirm its approvals (`unconfirmed`)."""
        if self.recovered is None:
            unconfirmed = self.unconfirmed()
            return Trust("ok") if unconfirmed is None else Trust("degraded", unconfirmed[0], unconfirmed[1])
        return Trust("degraded", self.recovered.get("why"), self.recovered.get("at"))

    def unconfirmed(self) -> tuple[str, str] | None:
        """(why, since) while the approvals held here cannot be confirmed with a shared store (state/): tools
        never pinned are then quarantined as `lost`, and nothing is written. Never for the file store."""
        return None

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
        self,
        names: Iterable[str] = (),
        *,
        servers: Iterable[str] = (),
        every: bool = False,
        reviewed: Mapping[str, str] | None = None,
    ) -> list[Quarantine]:
        """Pin the last-seen definition of the quarantined tools named (exposed names), of every quarantined
        tool of `servers`, or of all (`every`); return what was approved. `reviewed` maps a name to the hash of
        the definition a person reviewed (`Quarantine.hash`): when the upstream lists another one now, nothing
        is approved (`ApprovalMismatch`, with the new diff). A person's approval also ends a `degraded` trust.
        Raises `NexusError` for a name that is not quarantined, or when the store cannot be written (then
        nothing is approved)."""
        wanted, wanted_servers, reviewed = set(names), set(servers), dict(reviewed or {})
        with self._locked():
            self._reload_if_changed()
            pending = {quarantine.name: quarantine for quarantine in self.quarantined()}
            unknown = sorted((wanted | reviewed.keys()) - pending.keys())
            if unknown:
                listed = ", ".join(pending) or "none"
                raise NexusError(f"not quarantined: {', '.join(unknown)} (quarantined now: {listed})")
            for name, given in sorted(reviewed.items()):
                if not pending[name].matches(given):
                    raise ApprovalMismatch(_mismatch(pending[name], given))
            chosen = [
                q
                for q in pending.values()
                if every or q.name in wanted or q.name in reviewed or q.server in wanted_servers
            ]
            for quarantine in chosen:
                self._tools[quarantine.server][quarantine.tool] = {
                    "name": quarantine.name,
                    "pinned": quarantine.current,
                    "pinned_at": _now(),
                }
            acknowledged, self.recovered = self.recovered, None
            if (chosen or acknowledged) and not self._save():
                self._known = _UNREAD  # read the file again: nothing was approved
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
            if self.recovered is not None or self.unconfirmed() is not None:  # the store lost (or cannot
                return self._quarantined(name, None, definition, "lost")  # reach) what it knew: nothing pinned afresh
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

    def _reload_if_changed(self) -> bool:
        """Read the store again when it changed on disk; recover from a copy when it is damaged."""
        files = self._files
        if files is None or files.signature() == self._known:
            return False
        with self._locked():
            signature = files.signature()
            try:
                stored = files.read(files.path)
            except Unusable as exc:
                self._recover(f"{files.path.name} {exc.reason}", damaged=True)
                return True
            if stored is None:
                if self._loaded or files.exists(files.backup):
                    self._recover(f"{files.path.name} is missing", damaged=False)
                    return True
                stored = Stored()  # first use: nothing pinned yet
            self._adopt(stored)
            self._known = signature
        return True

    def _adopt(self, stored: Stored) -> None:
        self._tools, self._generation, self.recovered = stored.tools, stored.generation, stored.recovered
        self._loaded = True

    def _recover(self, why: str, *, damaged: bool) -> None:
        """Go on from the newest good copy (this process's, or `pins.json.bak`), or from nothing, degraded."""
        assert self._files is not None
        files = self._files
        if damaged:
            files.set_aside(files.path, why)
        copies: list[tuple[str, Stored]] = []
        if self._loaded:
            copies.append(("the copy this process held", Stored(self._tools, self._generation, self.recovered)))
        try:
            backup = files.read(files.backup)
        except Unusable as exc:
            logger.error("pin store copy %s %s; not used", files.backup, exc.reason)
            files.set_aside(files.backup, exc.reason)
            backup = None
        if backup is not None:
            copies.append((files.backup.name, backup))
        if copies:
            source, best = max(copies, key=lambda copy: copy[1].generation)
            note = f"{why}; restored the last good copy ({source}, generation {best.generation})"
        else:
            best = Stored()
            note = f"{why}, and no good copy was found: every tool waits for approval (nexus-gateway tools approve)"
        logger.error("pin store %s: %s; tools it holds no approval for are withheld until approved", files.path, note)
        self._adopt(best)
        self.recovered = {"at": _now(), "why": note}
        if not self._save():
            self._known = files.signature()  # not again every poll: this state stands until the file changes

    def _save(self) -> bool:
        if self._files is None:
            return True
        self._generation += 1
        saved = self._files.write(Stored(self._tools, self._generation, self.recovered))
        if saved:
            self._known = self._files.signature()
        return saved

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the store's advisory lock (a `.lock` file beside it) when the platform and directory allow;
        re-entrant within this store."""
        if self.path is None or fcntl is None or self._holding:
            self._holding += 1
            try:
                yield
            finally:
                self._holding -= 1
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path.with_name(f"{self.path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            fd = -1  # an unwritable state directory: nothing will be saved, so nothing to serialize
        try:
            if fd >= 0:
                fcntl.flock(fd, fcntl.LOCK_EX)
            self._holding += 1
            yield
        finally:
            self._holding -= 1
            if fd >= 0:
                os.close(fd)  # closing releases the lock


def _mismatch(quarantine: Quarantine, reviewed: str) -> str:
    return (
        f"{quarantine.name} changed since it was reviewed: you reviewed definition {reviewed.strip()[:HASH_CHARS]}, "
        f"the upstream lists {quarantine.hash} now (seen {quarantine.seen_at}). Nothing was approved. Review the "
        f"new definition below, then approve it with --hash {quarantine.hash}:\n{quarantine.diff()}"
    )
