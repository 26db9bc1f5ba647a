"""The store in Redis: replicas behind a load balancer share pins, vectors, start times and recent activity.

    <prefix>pins, pins:meta, pins:generation, pins:epoch   the pin store (redis_pins.py), and channel <prefix>pins
    <prefix>vectors:<embedder>, <prefix>examples   hashes: content hash -> value (`blobs`)
    <prefix>starts                               hash: server -> seconds its last first start took
    <prefix>calls, <prefix>runs                  capped lists (redis_activity.py)

One background task (`run`) keeps this replica current: it subscribes to the pin channel, reads the whole pin
store (and the start times) on every (re)connect, and every `TICK` seconds sends the calls and runs recorded
since and reads the lists back in one pipeline, which also tells that Redis answers. When it does not, the
link is `degraded` (/healthz `store`, /metrics `nexus_store_up`), the pin store is unconfirmed (fail closed,
redis_pins.py), the task reconnects with backoff, and everything resumes when Redis answers, without a
restart. Nothing on a request's path waits on Redis.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.abc

from nexus_gateway.activity import Activity
from nexus_gateway.catalog.pins import PinStore, QuarantineMode
from nexus_gateway.state._link import RedisLink, StoreUnavailable, redis_errors
from nexus_gateway.state.redis_activity import SharedActivity
from nexus_gateway.state.redis_pins import SharedPins
from nexus_gateway.state.store import Blobs, StartTimes, StoreStatus

logger = logging.getLogger(__name__)

TICK = 0.5
"""Seconds between two flushes of the activity lists (each also a check that Redis answers)."""
BACKOFF_MAX = 2.0
"""Longest wait between two reconnection attempts."""
_FAILURES: tuple[type[BaseException], ...] = (*redis_errors(), StoreUnavailable, TimeoutError)
_CLOSING_FAILURES: tuple[type[BaseException], ...] = (*_FAILURES, RuntimeError)


class RedisBlobs:
    """`Blobs` in one Redis hash."""

    def __init__(self, link: RedisLink, key: str) -> None:
        self._link = link
        self.key = key

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        if not keys or not self._link.ok:
            return [None] * len(keys)
        try:
            client = self._link.sync_client()
            values = self._link.call("blobs", f"reading {self.key}", client.hmget, self.key, list(keys))
        except StoreUnavailable:
            return [None] * len(keys)
        return [value if isinstance(value, bytes) else None for value in values]

    def put_many(self, items: Mapping[str, bytes]) -> None:
        if not items or not self._link.ok:
            return
        try:
            client = self._link.sync_client()
            values: dict[Any, Any] = dict(items)
            self._link.call("blobs", f"writing {self.key}", lambda: client.hset(self.key, mapping=values))
        except StoreUnavailable:
            return


class RedisStartTimes:
    """`StartTimes` in one Redis hash, read on connect."""

    def __init__(self, link: RedisLink, key: str) -> None:
        self._link = link
        self.key = key
        self.known: dict[str, float] = {}

    def take(self, raw: Mapping[Any, Any]) -> None:
        known = {}
        for name, value in raw.items():
            try:
                seconds = float(value)
            except (TypeError, ValueError):
                continue
            if seconds >= 0 and seconds != float("inf"):
                known[name.decode() if isinstance(name, bytes) else str(name)] = seconds
        self.known = known

    def load(self) -> dict[str, float]:
        return dict(self.known)

    def save(self, seconds: Mapping[str, float]) -> None:
        if not seconds or not self._link.ok:
            return
        values = {name: round(value, 2) for name, value in seconds.items()}
        try:
            client = self._link.sync_client()
            mapping: dict[Any, Any] = dict(values)
            self._link.call("starts", f"writing {self.key}", lambda: client.hset(self.key, mapping=mapping))
            self.known |= values
        except StoreUnavailable:
            return


class RedisStore:
    """`Store` in Redis at `url` (every key under `prefix`)."""

    backend: Literal["files", "redis"] = "redis"

    def __init__(self, url: str, state_dir: Path, *, prefix: str = "nexus:", timeout: float = 0.5) -> None:
        self.state_dir = state_dir
        self.prefix = prefix
        self.link = RedisLink(url, timeout=timeout)
        self._pins: SharedPins | None = None
        self._activity = SharedActivity(prefix)
        self._starts = RedisStartTimes(self.link, f"{prefix}starts")
        self._need_snapshot = True

    # -- Store ----------------------------------------------------------------------------------

    def pins(self, *, mode: QuarantineMode, quarantine_new: bool, legacy_path: Path | None) -> PinStore:
        if self._pins is None:
            self._pins = SharedPins(
                self.link, self.prefix, mode=mode, quarantine_new=quarantine_new, legacy_path=legacy_path
            )
        return self._pins

    def shared_pins(self) -> SharedPins:
        """The pin store (made with defaults when `pins` was not called yet: the CLI's reader)."""
        pins = self.pins(mode="pinned", quarantine_new=False, legacy_path=None)
        assert isinstance(pins, SharedPins)
        return pins

    def blobs(self, namespace: str) -> Blobs | None:
        return RedisBlobs(self.link, f"{self.prefix}{namespace}")

    def start_times(self) -> StartTimes | None:
        return self._starts

    def activity(self) -> Activity:
        return self._activity

    @property
    def round_trips(self) -> int:
        """Every command or pipeline sent to Redis so far (what `redis_round_trips_per_call` divides)."""
        return self.link.round_trips

    def status(self) -> StoreStatus:
        state = self.link.state
        return StoreStatus(
            "redis",
            "ok" if state.state == "ok" else "degraded",
            state.last_error,
            state.since,
            self.link.round_trips,
            dict(self.link.by_use),
        )

    async def connect(self) -> None:
        """Read the pin store and start times before the upstreams list (at most a few timeouts)."""
        try:
            with anyio.fail_after(self.link.timeout * 4):
                client = self.link.async_client()
                try:
                    await self._snapshot(client)
                finally:
                    await client.aclose()
        except _FAILURES as exc:
            self.link.failed("reading the store at start", exc)

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        backoff = 0.05
        while True:
            try:
                await self._follow()
            except _FAILURES as exc:
                self.link.failed("following the store", exc)
                self._activity.unreachable()
                self._need_snapshot = True
            await anyio.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX)
            if self.link.ok:
                backoff = 0.05

    def close(self) -> None:
        self.link.close()

    # -- inside ---------------------------------------------------------------------------------

    async def _follow(self) -> None:
        """Subscribe, read everything, then take messages and tick until the connection fails."""
        listener, client = self.link.async_client(idle=True), self.link.async_client()
        pubsub = listener.pubsub()
        try:
            with anyio.fail_after(self.link.timeout * 4):
                await pubsub.subscribe(f"{self.prefix}pins")
            self.link.count("subscribe")
            self._need_snapshot = True
            next_tick = 0.0
            while True:
                if self._need_snapshot or not self.link.ok:
                    await self._snapshot(client)
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=TICK / 2)
                taken = message is None or message.get("type") != "message" or self._pins is None
                if not taken and not self._pins.apply_message(message.get("data")):  # type: ignore[union-attr]
                    self._need_snapshot = True
                if time.monotonic() >= next_tick:
                    await self._tick(client)
                    next_tick = time.monotonic() + TICK
        finally:
            with anyio.CancelScope(shield=True):
                for closing in (pubsub, listener, client):
                    try:
                        with anyio.move_on_after(1):
                            await closing.aclose()
                    except _CLOSING_FAILURES:
                        pass

    async def _snapshot(self, client: Any) -> None:
        """The whole pin store and the start times, as of one moment (MULTI)."""
        pipe = client.pipeline(transaction=True)
        pipe.hgetall(f"{self.prefix}pins")
        pipe.get(f"{self.prefix}pins:meta")
        pipe.get(f"{self.prefix}pins:generation")
        pipe.get(f"{self.prefix}pins:epoch")
        pipe.hgetall(f"{self.prefix}starts")
        self.link.count("snapshot")
        with anyio.fail_after(self.link.timeout * 4):
            fields, meta, generation, epoch, starts = await pipe.execute()
        if self._pins is not None:
            self._pins.apply_snapshot(fields, meta, generation, epoch)
        if isinstance(starts, dict):
            self._starts.take(starts)
        self._need_snapshot = False
        self.link.recovered()

    async def _tick(self, client: Any) -> None:
        """Send the activity recorded since the last tick and read the shared lists back, with the pin store's
        epoch (an emptied Redis is noticed under live connections too), in one round trip."""
        calls, runs, calls_upto, runs_upto = self._activity.pending()
        keep = self._activity.keep
        pipe = client.pipeline(transaction=False)
        for key, lines in ((self._activity.calls_key, calls), (self._activity.runs_key, runs)):
            if lines:
                pipe.lpush(key, *lines)
                pipe.ltrim(key, 0, keep - 1)
        pipe.lrange(self._activity.calls_key, 0, keep - 1)
        pipe.lrange(self._activity.runs_key, 0, keep - 1)
        pipe.get(f"{self.prefix}pins:epoch")
        self.link.count("activity")
        with anyio.fail_after(self.link.timeout * 4):
            results = await pipe.execute()
        self._activity.sent(calls_upto, runs_upto, results[-3], results[-2])
        if self._pins is not None and self._pins.epoch_changed(results[-1]):
            self._need_snapshot = True
