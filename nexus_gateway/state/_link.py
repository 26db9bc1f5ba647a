"""The gateway's connection to Redis: its clients, how many round trips it made, and whether it is up.

Two clients of redis-py: the asyncio one for what runs in the event loop (the pub/sub listener, the periodic
flush of recent calls, start times) and the blocking one for the pin store's writes, which must be confirmed
before a judgment is served and are made from synchronous code (a listing's judging, `tools approve`), and
for vectors, which are read and written from the indexing worker thread. Both time out after
`cluster.timeout` seconds.

Every command or pipeline sent is one round trip, counted in `round_trips` (by what it was for, in `by_use`),
so a benchmark can tell that `tools/call` makes none. A failure marks the link `degraded` with the error
(`last_error`) and since when; while degraded, the blocking writers do not try (nothing waits on a dead
Redis on a request path), and the listener reconnects with backoff, then marks it `ok` again after a full
re-read. Redis errors are translated here into `StoreUnavailable`, once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nexus_gateway.errors import NexusError

if TYPE_CHECKING:
    import redis
    import redis.asyncio

logger = logging.getLogger(__name__)


class StoreUnavailable(NexusError):
    """The shared store could not be reached, or answered something unusable."""


def _redis_errors() -> tuple[type[BaseException], ...]:
    import redis.exceptions

    return (redis.exceptions.RedisError, OSError)


@dataclass(frozen=True)
class LinkState:
    state: str
    """`ok` or `degraded`."""
    last_error: str | None
    since: str | None
    """UTC time of the change to the present state (None before the first)."""


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class RedisLink:
    """One Redis deployment, as the store reaches it (`url`, `timeout` in seconds)."""

    def __init__(self, url: str, *, timeout: float) -> None:
        try:
            import redis  # noqa: F401  (the `cluster` extra)
        except ImportError:
            raise StoreUnavailable(
                "nexus.cluster.redis_url is set but the redis package is not installed: "
                "pip install 'nexus-gateway[cluster]'"
            ) from None
        self.url = url
        self.timeout = timeout
        self._lock = threading.Lock()
        self.round_trips = 0
        self.by_use: Counter[str] = Counter()
        self.errors = 0
        self._state = LinkState("degraded", "not connected yet", _now())
        self._sync: redis.Redis | None = None

    # -- health ---------------------------------------------------------------------------------

    @property
    def ok(self) -> bool:
        return self._state.state == "ok"

    @property
    def state(self) -> LinkState:
        return self._state

    def count(self, use: str, trips: int = 1) -> None:
        with self._lock:
            self.round_trips += trips
            self.by_use[use] += trips

    def failed(self, what: str, exc: BaseException) -> StoreUnavailable:
        """Record a failure (logged once per change of error) and return it as `StoreUnavailable`."""
        message = f"{what}: {type(exc).__name__}: {exc}"[:300]
        with self._lock:
            self.errors += 1
            changed = self._state.state != "degraded" or self._state.last_error != message
            if changed:
                self._state = LinkState("degraded", message, _now())
        if changed:
            logger.error(
                "state store: Redis at %s failed (%s); serving what this replica holds, withholding tools whose "
                "approval it cannot confirm, until Redis answers again",
                self.redacted_url,
                message,
            )
        return StoreUnavailable(message)

    def recovered(self) -> None:
        with self._lock:
            was = self._state
            self._state = LinkState("ok", None, _now())
        if was.state != "ok":
            logger.info("state store: Redis at %s answers again (after: %s)", self.redacted_url, was.last_error)

    @property
    def redacted_url(self) -> str:
        """The URL without a password."""
        scheme, sep, rest = self.url.partition("://")
        if "@" in rest:
            rest = "***@" + rest.split("@", 1)[1]
        return f"{scheme}{sep}{rest}"

    # -- clients --------------------------------------------------------------------------------

    def sync_client(self) -> redis.Redis:
        """The blocking client (connections made on use; safe to share between threads)."""
        with self._lock:
            if self._sync is None:
                import redis
                from redis.backoff import NoBackoff
                from redis.retry import Retry

                self._sync = redis.Redis.from_url(
                    self.url,
                    socket_timeout=self.timeout,
                    socket_connect_timeout=self.timeout,
                    retry=Retry(NoBackoff(), 0),  # a failure is reported at once; the listener reconnects
                )
            return self._sync

    def async_client(self, *, idle: bool = False) -> redis.asyncio.Redis:
        """A new asyncio client (one per task that needs its own connection: the pub/sub listener, whose
        connection may stay `idle` between messages: no read timeout, a PING tells it is alive)."""
        import redis.asyncio
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff

        return redis.asyncio.Redis.from_url(
            self.url,
            socket_timeout=None if idle else self.timeout,
            socket_connect_timeout=self.timeout,
            retry=Retry(NoBackoff(), 0),
        )

    def call(self, use: str, what: str, command: Any, *args: Any) -> Any:
        """`command(*args)` on the blocking client: one round trip, counted; failures become `StoreUnavailable`."""
        self.count(use)
        try:
            return command(*args)
        except _redis_errors() as exc:
            raise self.failed(what, exc) from exc

    def close(self) -> None:
        with self._lock:
            client, self._sync = self._sync, None
        if client is not None:
            client.close()


def redis_errors() -> tuple[type[BaseException], ...]:
    """What redis-py raises for an unreachable or failing server (to catch at the store's boundary)."""
    return _redis_errors()
