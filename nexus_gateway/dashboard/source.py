"""What the dashboard reads and does, behind one narrow Protocol (`DashboardSource`), and its gateway form.

The pages (pages.py) see only `DashboardSource`; `GatewaySource` answers it from a running `Gateway` and
the front's record of connected clients (a callable the HTTP front passes in, since the front sits above).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from nexus_gateway.activity import Activity
from nexus_gateway.catalog import ToolRecord
from nexus_gateway.catalog.pins import PinStore, Quarantine, Trust
from nexus_gateway.errors import NexusError
from nexus_gateway.gateway import Gateway, SearchResult
from nexus_gateway.upstreams.pool import UpstreamStatus


@dataclass(frozen=True)
class ClientRow:
    """One connected client as the front saw it."""

    transport: str
    """`stdio`, `sse` or `streamable-http`."""
    era: str
    """`legacy` (the handshake era) or `modern` (2026-07-28, stateless)."""
    protocol_version: str
    name: str
    """The client's own name and version (`clientInfo`), or `-`."""
    owner: str
    """The bearer token's identity (`token-<n>`), or `-` without tokens."""
    profile: str
    """The profile the client is served through, or `-`."""
    since: float
    last_seen: float
    requests: int


@dataclass(frozen=True)
class QuarantineRow:
    quarantine: Quarantine
    withheld: bool
    """Not shown to hosts at all (else the pinned definition is shown)."""


class DashboardSource(Protocol):
    """All the dashboard needs of the gateway."""

    @property
    def mode(self) -> str: ...
    @property
    def tau(self) -> float: ...
    @property
    def activity(self) -> Activity: ...
    def upstreams(self) -> list[UpstreamStatus]: ...
    def tools(self) -> list[ToolRecord]: ...
    async def search(self, query: str, k: int) -> list[SearchResult]: ...
    def quarantined(self) -> list[QuarantineRow]: ...
    def approve(self, name: str, reviewed: str) -> Quarantine:
        """Pin `name`'s definition if it is still the one whose hash (`reviewed`) the page showed."""
        ...

    def trust(self) -> Trust: ...
    def clients(self) -> list[ClientRow]: ...
    async def sign_in(self, name: str) -> str:
        """Start the OAuth sign-in of upstream `name` (one that needs authorization); its authorization URL."""
        ...


class GatewaySource:
    """`DashboardSource` over a running gateway."""

    def __init__(self, gateway: Gateway, clients: Callable[[], list[ClientRow]]) -> None:
        self.gateway = gateway
        self._clients = clients

    @property
    def mode(self) -> str:
        return self.gateway.mode

    @property
    def tau(self) -> float:
        return self.gateway.retriever.tau

    @property
    def activity(self) -> Activity:
        return self.gateway.activity

    def upstreams(self) -> list[UpstreamStatus]:
        return sorted(self.gateway.pool.statuses(), key=lambda status: status.name)

    def tools(self) -> list[ToolRecord]:
        return sorted(self.gateway.catalog, key=lambda record: record.name)

    async def search(self, query: str, k: int) -> list[SearchResult]:
        """The ranking `search_tools` answers with (the same call), scores and gate decision included."""
        return await self.gateway.search(query, k)

    def _store(self) -> PinStore:
        """A fresh reader of the gateway's pin store, as `nexus-gateway tools approve` opens it: a write
        through it is a change on disk, which the running gateway notices and re-judges (`_watch_pins`)."""
        path = self.gateway.catalog.pins.path
        if path is None:
            if self.gateway.store.backend == "redis":  # shared by every replica: approve through it
                return self.gateway.catalog.pins
            raise NexusError("this gateway keeps no pin store on disk, so nothing can be approved here")
        return PinStore(path)

    def quarantined(self) -> list[QuarantineRow]:
        """What upstreams list now and is quarantined in the store (an approval shows at once, before the
        gateway has re-judged the listing)."""
        path = self.gateway.catalog.pins.path
        pending = None if path is None else {quarantine.name for quarantine in PinStore(path).quarantined()}
        return [
            QuarantineRow(quarantine, withheld)
            for quarantine, withheld in self.gateway.catalog.quarantined()
            if pending is None or quarantine.name in pending
        ]

    def approve(self, name: str, reviewed: str) -> Quarantine:
        if not reviewed:
            raise NexusError(f"the approval of {name} names no reviewed definition (hash); reload the page")
        [approved] = self._store().approve(reviewed={name: reviewed})
        return approved

    def trust(self) -> Trust:
        return self.gateway.catalog.pins.trust

    def clients(self) -> list[ClientRow]:
        return self._clients()

    async def sign_in(self, name: str) -> str:
        upstream = self.gateway.pool.get(name)
        if upstream is None:
            raise NexusError(f"no upstream named {name!r}")
        return await upstream.begin_sign_in(self.gateway.pool.spawn)
