"""Who is on the other end of a request: the client identity a front sets for each connection it serves.

The daemon's Unix-socket front (server/unix.py) serves each `nexus-gateway connect` as a stdio session of
its own; before the MCP stream starts, the shim names the profile it was launched with. The front sets a
`ClientIdentity` for everything that connection runs (`serving_as`), so any handler can ask who it serves
(`current_client()`): `run` keys its engine session by it (one per host, in both protocol eras), and a
per-profile filter can read `profile`. `serve` over stdio serves one host, and sets its identity for every
request; fronts that set none (HTTP, in-memory clients) answer None, and `run` keys by the connection.

Identities compare by object, never by value: two hosts with the same profile are two clients.
"""

from __future__ import annotations

import contextvars
import itertools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

Transport = str
"""How the client reached the gateway: "socket" (the daemon's shim), "stdio", "http"."""

_numbers = itertools.count(1)


@dataclass(frozen=True, eq=False)
class ClientIdentity:
    """One connected client. `profile` is the profile it asked for (None: the whole gateway)."""

    profile: str | None
    transport: Transport
    number: int = field(default_factory=lambda: next(_numbers))
    """Unique in the process, for logs and `daemon status`."""
    since: float = field(default_factory=time.time)
    """When it connected (seconds since the epoch)."""
    pid: int | None = None
    """The client process, when the transport can tell (the shim's pid, from the socket's peer credentials)."""

    def describe(self) -> dict[str, object]:
        return {
            "client": self.number,
            "profile": self.profile,
            "transport": self.transport,
            "since": self.since,
            "pid": self.pid,
        }


_current: contextvars.ContextVar[ClientIdentity | None] = contextvars.ContextVar("nexus_client", default=None)


def current_client() -> ClientIdentity | None:
    """The client the running request came from, when its front set one."""
    return _current.get()


@contextmanager
def serving_as(identity: ClientIdentity) -> Iterator[ClientIdentity]:
    """Everything run inside (and every task started inside) serves `identity`."""
    token = _current.set(identity)
    try:
        yield identity
    finally:
        _current.reset(token)


class ConnectedClients:
    """The clients a front is serving now, in the order they connected."""

    def __init__(self) -> None:
        self._clients: dict[int, ClientIdentity] = {}

    @contextmanager
    def connected(self, identity: ClientIdentity) -> Iterator[ClientIdentity]:
        """Count `identity` as connected, and serve as it, for the duration of the block."""
        self._clients[identity.number] = identity
        try:
            with serving_as(identity):
                yield identity
        finally:
            self._clients.pop(identity.number, None)

    def __len__(self) -> int:
        return len(self._clients)

    def snapshot(self) -> list[ClientIdentity]:
        return list(self._clients.values())
