"""What the gateway asks of its state store (`Store`), whichever keeps it: the state directory or Redis."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import anyio
import anyio.abc

from nexus_gateway.activity import Activity
from nexus_gateway.catalog.pins import PinStore, QuarantineMode


@dataclass(frozen=True)
class StoreStatus:
    """For /healthz and /metrics: which store, whether it answers, its last error, its round trips so far."""

    backend: Literal["files", "redis"]
    state: Literal["ok", "degraded"]
    last_error: str | None = None
    since: str | None = None
    round_trips: int = 0
    by_use: Mapping[str, int] | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"backend": self.backend, "state": self.state}
        if self.backend == "redis":
            body |= {"last_error": self.last_error, "since": self.since, "round_trips": self.round_trips}
        return body

    def metrics(self) -> str:
        """Prometheus text: `nexus_store_up`, `nexus_store_round_trips_total` (by use)."""
        lines = [
            "# HELP nexus_store_up Whether the state store answers (1) or is degraded (0).",
            "# TYPE nexus_store_up gauge",
            f'nexus_store_up{{backend="{self.backend}"}} {int(self.state == "ok")}',
            "# HELP nexus_store_round_trips_total Round trips to the shared store (Redis), by what they were for.",
            "# TYPE nexus_store_round_trips_total counter",
            *(f'nexus_store_round_trips_total{{use="{use}"}} {n}' for use, n in sorted((self.by_use or {}).items())),
        ]
        return "\n".join(lines) + "\n"


class Blobs(Protocol):
    """Values by content hash, shared by every replica (vectors, usage examples). Blocking: call from a
    worker thread. Never raises for an unreachable store: a miss, and nothing written."""

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]: ...
    def put_many(self, items: Mapping[str, bytes]) -> None: ...


class StartTimes(Protocol):
    """Seconds each upstream's first start took last time (upstreams/start_order.py)."""

    def load(self) -> dict[str, float]: ...
    def save(self, seconds: Mapping[str, float]) -> None: ...


class Store(Protocol):
    """The gateway's state, kept in the state directory (`FileStore`) or shared in Redis (`RedisStore`)."""

    backend: Literal["files", "redis"]

    def pins(self, *, mode: QuarantineMode, quarantine_new: bool, legacy_path: Path | None) -> PinStore:
        """The pin store (made once; the same object after)."""
        ...

    def blobs(self, namespace: str) -> Blobs | None:
        """Shared values by hash under `namespace`, or None when the state directory's own files do it."""
        ...

    def start_times(self) -> StartTimes | None:
        """Shared start times (read on `connect`), or None when the state directory's `starts.json` does it."""
        ...

    def activity(self) -> Activity:
        """The last calls and runs the dashboard shows (of every replica, with Redis)."""
        ...

    def status(self) -> StoreStatus: ...

    async def connect(self) -> None:
        """Read what the gateway needs before its upstreams list (the pins); bounded, never raises."""
        ...

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Keep the store current until cancelled (Redis: the pin channel, reconnects, the activity flush)."""
        ...

    def close(self) -> None: ...
