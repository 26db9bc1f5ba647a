"""The catalog: every upstream tool under one exposed name, with its schema and a content hash.

Names come from `naming.py`: `server__tool` by default (always matching `^[a-zA-Z0-9_-]{1,64}$`,
a hash suffix where the natural name would be invalid or ambiguous), or the server's own `prefix`.
Two servers never share a name: when custom prefixes make them collide, the server earlier in the
config keeps the name and the other's tool is withheld (logged, and listed in `collisions`).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from nexus_gateway.catalog.naming import prefix_of, tool_name
from nexus_gateway.catalog.pins import PinStore, Quarantine
from nexus_gateway.catalog.signatures import signature

logger = logging.getLogger(__name__)


def namespaced_name(server: str, tool: str) -> str:
    """The exposed name of a tool under the default prefix (`server__tool`; see `naming.py`)."""
    return tool_name(server, tool)


def content_hash(tool: Mapping[str, Any]) -> str:
    """Hash of what a model sees of a tool: name, description and both schemas."""
    material = {key: tool.get(key) for key in ("name", "description", "inputSchema", "outputSchema")}
    return hashlib.sha256(json.dumps(material, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@dataclass(frozen=True)
class ToolRecord:
    name: str
    """Namespaced name the gateway exposes."""
    server: str
    upstream_name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    title: str | None = None
    annotations: dict[str, Any] | None = None
    content_hash: str = ""
    quarantine: Quarantine | None = None
    """Set when the upstream now lists another definition than the pinned one this record holds
    (a possible tool-poisoning change, waiting for `nexus-gateway tools approve`)."""

    @classmethod
    def from_tool(
        cls, server: str, tool: Mapping[str, Any], *, quarantine: Quarantine | None = None, name: str | None = None
    ) -> ToolRecord:
        """Build a record from an MCP Tool in wire form (camelCase keys); `name` overrides the namespaced
        name (evaluation sets keep their tools' names exactly as given)."""
        schema = tool.get("inputSchema") or {"type": "object"}
        return cls(
            name=name or namespaced_name(server, tool["name"]),
            server=server,
            upstream_name=tool["name"],
            description=tool.get("description") or "",
            input_schema=dict(schema),
            output_schema=tool.get("outputSchema"),
            title=tool.get("title"),
            annotations=tool.get("annotations"),
            content_hash=content_hash(tool),
            quarantine=quarantine,
        )

    @property
    def read_only(self) -> bool:
        return bool(self.annotations and self.annotations.get("readOnlyHint"))

    @property
    def signature(self) -> str:
        """The compressed one-line signature (signatures.py), complete enough to call the tool."""
        return signature(self.name, self.description, self.input_schema)

    def to_wire(self, *, name: str | None = None) -> dict[str, Any]:
        """The tool as an MCP Tool object under its namespaced name."""
        wire: dict[str, Any] = {"name": name or self.name, "description": self.description}
        wire["inputSchema"] = self.input_schema
        if self.title:
            wire["title"] = self.title
        if self.output_schema:
            wire["outputSchema"] = self.output_schema
        if self.annotations:
            wire["annotations"] = self.annotations
        return wire


@dataclass(frozen=True)
class CatalogDiff:
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)


@dataclass(frozen=True)
class NameCollision:
    """A tool withheld because another server already exposes its name (custom prefixes only)."""

    name: str
    server: str
    tool: str
    owner: str
    owner_tool: str

    @property
    def message(self) -> str:
        return (
            f"server {self.server!r}, key 'prefix': its tool {self.tool!r} would be exposed as {self.name!r}, "
            f"which server {self.owner!r} already exposes (its tool {self.owner_tool!r}); the tool of "
            f"{self.server!r} is withheld: give one of the two servers a distinct prefix"
        )


class Catalog:
    """Tool records of every upstream, replaced one server at a time. Each tool is judged by the pin
    store: a quarantined tool's record holds its pinned definition, or the tool is withheld.

    `prefixes` maps each configured server, in config order, to its `prefix` (None: `<server>__`).
    When two servers' tools would share a name, the server earlier in that order keeps it, whichever
    listed first, so the outcome does not depend on start-up order; the other tool is withheld until
    the name is free again.
    """

    def __init__(self, pins: PinStore | None = None, *, prefixes: Mapping[str, str | None] | None = None) -> None:
        self.pins = pins or PinStore()
        self._prefixes = dict(prefixes or {})
        self._rank = {server: index for index, server in enumerate(self._prefixes)}
        self._by_name: dict[str, ToolRecord] = {}
        self._by_server: dict[str, list[str]] = {}
        self._awaiting: dict[str, dict[str, Quarantine]] = {}
        self._withheld: dict[str, dict[str, ToolRecord]] = {}

    def set_prefixes(self, prefixes: Mapping[str, str | None]) -> None:
        """The configured servers and their prefixes after a config reload (same meaning as in `__init__`)."""
        self._prefixes = dict(prefixes)
        self._rank = {server: index for index, server in enumerate(self._prefixes)}

    def exposed_name(self, server: str, tool: str) -> str:
        return tool_name(server, tool, self._prefixes.get(server))

    def replace_server(self, server: str, tools: Iterable[Mapping[str, Any]]) -> CatalogDiff:
        """Install a server's current tool list; return what changed."""
        before = {name: self._by_name[name] for name in self._by_server.get(server, [])}
        was_quarantined = {q.name for q in self._awaiting.get(server, {}).values()} | {
            name for name, record in before.items() if record.quarantine
        }
        listed: dict[str, Mapping[str, Any]] = {}
        for tool in tools:
            name = self.exposed_name(server, tool["name"])
            if name in listed:
                logger.warning("server %s lists tool %r twice; keeping the first", server, tool["name"])
                continue
            listed[name] = tool
        after: dict[str, ToolRecord] = {}
        awaiting: dict[str, Quarantine] = {}
        withheld: dict[str, ToolRecord] = {}
        sightings = self.pins.observe_server(server, list(listed.items()))
        for name, sighting in zip(listed, sightings, strict=True):
            if sighting.quarantine is not None and name not in was_quarantined:
                logger.warning("%s", sighting.quarantine.why)
            if sighting.shown is None:
                assert sighting.quarantine is not None
                awaiting[name] = sighting.quarantine
                continue
            record = ToolRecord.from_tool(server, sighting.shown, quarantine=sighting.quarantine, name=name)
            owner = self._by_name.get(name)
            if owner is not None and owner.server != server:
                if self._keeps(owner.server, over=server):
                    withheld[name] = record
                    logger.error("config error: %s", self._collision(record, owner).message)
                    continue
                self._evict(owner, by=record)
            after[name] = record
        for name in before:
            self._by_name.pop(name, None)
        self._by_name.update(after)
        self._by_server[server] = list(after)
        self._awaiting[server] = awaiting
        self._withheld[server] = withheld
        for name in before.keys() - after.keys():
            self._promote(name)
        return CatalogDiff(
            added=tuple(sorted(after.keys() - before.keys())),
            removed=tuple(sorted(before.keys() - after.keys())),
            changed=tuple(
                sorted(n for n in after.keys() & before.keys() if after[n].content_hash != before[n].content_hash)
            ),
        )

    def _keeps(self, owner: str, *, over: str) -> bool:
        """Whether `owner` keeps a contested name against `over`: earlier in the config wins; among
        servers the config does not rank (catalogs built without prefixes), the first to list."""
        unranked = len(self._rank)
        return self._rank.get(owner, unranked) <= self._rank.get(over, unranked)

    def _evict(self, owner: ToolRecord, *, by: ToolRecord) -> None:
        self._by_server[owner.server].remove(owner.name)
        self._withheld.setdefault(owner.server, {})[owner.name] = owner
        logger.error("config error: %s", self._collision(owner, by).message)

    def _promote(self, name: str) -> None:
        """Give a freed name to the best-ranked server whose tool was withheld for it."""
        waiting = sorted(
            (server for server, records in self._withheld.items() if name in records),
            key=lambda server: self._rank.get(server, len(self._rank)),
        )
        if waiting:
            record = self._withheld[waiting[0]].pop(name)
            self._by_name[name] = record
            self._by_server.setdefault(record.server, []).append(name)
            logger.info("tool %s of server %s is no longer withheld", name, record.server)

    @staticmethod
    def _collision(record: ToolRecord, owner: ToolRecord) -> NameCollision:
        return NameCollision(record.name, record.server, record.upstream_name, owner.server, owner.upstream_name)

    @property
    def collisions(self) -> list[NameCollision]:
        """Every tool withheld now because another server exposes its name."""
        found = []
        for records in self._withheld.values():
            for name, record in records.items():
                owner = self._by_name.get(name)
                if owner is not None:
                    found.append(self._collision(record, owner))
        return sorted(found, key=lambda collision: (collision.name, collision.server))

    def servers_for(self, name: str) -> list[str]:
        """Configured servers whose prefix `name` starts with, longest prefix first: who would serve a
        name the catalog does not hold (yet)."""
        matches = [
            (len(prefix), server)
            for server, configured in self._prefixes.items()
            if name.startswith(prefix := prefix_of(server, configured))
        ]
        return [server for _, server in sorted(matches, key=lambda match: -match[0])]

    def get(self, name: str) -> ToolRecord | None:
        return self._by_name.get(name)

    def awaiting_approval(self, name: str) -> Quarantine | None:
        """Why a listed tool is not served (quarantine mode `withhold`, or never approved)."""
        return next((q for tools in self._awaiting.values() if (q := tools.get(name)) is not None), None)

    def quarantined(self) -> list[tuple[Quarantine, bool]]:
        """Every quarantined tool an upstream lists now, with whether it is withheld (else shown pinned)."""
        shown = [(record.quarantine, False) for record in self if record.quarantine is not None]
        hidden = [(quarantine, True) for tools in self._awaiting.values() for quarantine in tools.values()]
        return sorted(shown + hidden, key=lambda item: item[0].name)

    def close_matches(self, name: str, limit: int = 3) -> list[str]:
        return difflib.get_close_matches(name, self._by_name.keys(), n=limit, cutoff=0.6)

    def __iter__(self) -> Iterator[ToolRecord]:
        return iter(sorted(self._by_name.values(), key=lambda record: record.name))

    def __len__(self) -> int:
        return len(self._by_name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name
