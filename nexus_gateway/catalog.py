"""The catalog: every upstream tool under one namespaced name, with its schema and a content hash.

Names are `server__tool`, always matching `^[a-zA-Z0-9_-]{1,64}$`. A name that had to be altered
(characters replaced, too long, or a server name holding `__`) gets a hash suffix of the original
pair, so names are deterministic and distinct pairs never collide.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import logging
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from nexus_gateway.pins import PinStore, Quarantine

logger = logging.getLogger(__name__)

SEPARATOR = "__"
MAX_NAME = 64
_VALID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_INVALID_CHAR = re.compile(r"[^a-zA-Z0-9_-]")


def namespaced_name(server: str, tool: str) -> str:
    """`server__tool`, shortened or cleaned deterministically so it is a valid MCP tool name."""
    raw = f"{server}{SEPARATOR}{tool}"
    if _VALID.match(raw) and SEPARATOR not in server:
        return raw
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    cleaned = _INVALID_CHAR.sub("_", raw)
    return f"{cleaned[: MAX_NAME - len(digest) - 1]}_{digest}"


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


class Catalog:
    """Tool records of every upstream, replaced one server at a time. Each tool is judged by the pin
    store: a quarantined tool's record holds its pinned definition, or the tool is withheld."""

    def __init__(self, pins: PinStore | None = None) -> None:
        self.pins = pins or PinStore()
        self._by_name: dict[str, ToolRecord] = {}
        self._by_server: dict[str, list[str]] = {}
        self._awaiting: dict[str, dict[str, Quarantine]] = {}

    def replace_server(self, server: str, tools: Iterable[Mapping[str, Any]]) -> CatalogDiff:
        """Install a server's current tool list; return what changed."""
        before = {name: self._by_name[name] for name in self._by_server.get(server, [])}
        was_quarantined = {q.name for q in self._awaiting.get(server, {}).values()} | {
            name for name, record in before.items() if record.quarantine
        }
        listed: dict[str, Mapping[str, Any]] = {}
        for tool in tools:
            name = namespaced_name(server, tool["name"])
            if name in listed:
                logger.warning("server %s lists tool %r twice; keeping the first", server, tool["name"])
                continue
            owner = self._by_name.get(name)
            if owner is not None and owner.server != server:
                logger.error("tool name %s of server %s collides with server %s", name, server, owner.server)
                continue
            listed[name] = tool
        after: dict[str, ToolRecord] = {}
        awaiting: dict[str, Quarantine] = {}
        sightings = self.pins.observe_server(server, list(listed.items()))
        for name, sighting in zip(listed, sightings, strict=True):
            if sighting.quarantine is not None and name not in was_quarantined:
                logger.warning("%s", sighting.quarantine.why)
            if sighting.shown is None:
                assert sighting.quarantine is not None
                awaiting[name] = sighting.quarantine
                continue
            after[name] = ToolRecord.from_tool(server, sighting.shown, quarantine=sighting.quarantine, name=name)
        for name in before:
            self._by_name.pop(name, None)
        self._by_name.update(after)
        self._by_server[server] = list(after)
        self._awaiting[server] = awaiting
        return CatalogDiff(
            added=tuple(sorted(after.keys() - before.keys())),
            removed=tuple(sorted(before.keys() - after.keys())),
            changed=tuple(
                sorted(n for n in after.keys() & before.keys() if after[n].content_hash != before[n].content_hash)
            ),
        )

    def drop_server(self, server: str) -> CatalogDiff:
        return self.replace_server(server, [])

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

    def server_tools(self, server: str) -> list[ToolRecord]:
        return [self._by_name[name] for name in self._by_server.get(server, [])]

    def close_matches(self, name: str, limit: int = 3) -> list[str]:
        return difflib.get_close_matches(name, self._by_name.keys(), n=limit, cutoff=0.6)

    def __iter__(self) -> Iterator[ToolRecord]:
        return iter(sorted(self._by_name.values(), key=lambda record: record.name))

    def __len__(self) -> int:
        return len(self._by_name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name
