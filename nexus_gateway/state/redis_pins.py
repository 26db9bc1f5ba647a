"""The pin store in Redis: every replica judges listings against one shared set of approvals.

`SharedPins` is a `PinStore` (catalog/pins.py: the same judging, quarantine and approval) whose persistence is
Redis instead of `pins.json`:

    <prefix>pins             hash: server -> {"format": 1, "generation": 0, "tools": {server: {tool: entry}}}
    <prefix>pins:meta        string: {"recovered": {"at", "why"}} while trust is degraded (absent otherwise)
    <prefix>pins:generation  counter, one up per write
    <prefix>pins:epoch       string: a random token naming this incarnation of the store, set by its first write
    <prefix>pins             channel: each write's generation and new values, published by the write itself

Each replica holds a mirror of these keys, read whole on (re)connect and kept current by the channel, and
judges from it in memory: a `tools/call` never waits on Redis. A write (a listing that changed something, an
approval) is one Lua script that checks every server it rewrites still holds what the mirror says
(compare-and-set), writes, counts the generation and publishes, atomically; when another replica wrote first,
the mirror takes the newer value and the judging is done again, so an approval is never lost to another
replica's write. Writes are confirmed before the judgment is served.

Trust fails closed:
- Redis unreachable (or never read since start): the store is `unconfirmed` (trust degraded, shown by
  /healthz): what the mirror approved is still served, a tool it holds no approval for is quarantined as
  `lost` (withheld), nothing is written, and approvals are refused. When Redis answers again the mirror is
  read again and every listing judged again.
- A server's value that is not a sound pin entry (garbage): logged as an error, the last good copy this
  replica held is used (none: every tool of that server waits for approval), and the store is degraded
  (`recovered`, written back for every replica) until a person approves, as with a damaged `pins.json`.
- Redis found empty after it held pins (restarted without persistence, FLUSHALL): the mirror's copy is
  written back, degraded the same way. The recovery note is written in the same script as the copy (and the
  copy starts a new epoch), so a replica that reads the copy back, rather than the emptiness, sees the epoch
  change and takes the note with it: every replica withholds what no one approved until a person approves.
  A replica that finds the epoch changed with no note beside it (the store was replaced) writes a note itself.
  The activity tick reads the epoch too, so a FLUSHALL under live connections is noticed within a tick.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nexus_gateway.catalog._pinfile import Stored, Unusable, parse
from nexus_gateway.catalog.pins import PinStore, Quarantine, QuarantineMode, Sighting
from nexus_gateway.errors import NexusError
from nexus_gateway.state._link import RedisLink, StoreUnavailable

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 8
"""Judgings of one listing or approval when other replicas keep writing first."""

_WRITE = """
local epoch = redis.call('GET', KEYS[4])
if epoch == false then epoch = '' end
if epoch ~= ARGV[4] then return {0, '', epoch} end
if epoch == '' then epoch = ARGV[5]; redis.call('SET', KEYS[4], epoch) end
local n = (#ARGV - 5) / 3
for i = 0, n - 1 do
  local now = redis.call('HGET', KEYS[1], ARGV[6 + 3 * i])
  if now == false then now = '' end
  if now ~= ARGV[7 + 3 * i] then return {0, ARGV[6 + 3 * i], epoch} end
end
local generation = redis.call('INCR', KEYS[3])
local servers = {}
for i = 0, n - 1 do
  local field, value = ARGV[6 + 3 * i], ARGV[8 + 3 * i]
  if value == '' then redis.call('HDEL', KEYS[1], field) else redis.call('HSET', KEYS[1], field, value) end
  servers[field] = value
end
local message = {generation = generation, servers = servers, epoch = epoch}
if ARGV[2] == 'set' then
  redis.call('SET', KEYS[2], ARGV[3]); message['meta'] = ARGV[3]
elseif ARGV[2] == 'clear' then
  redis.call('DEL', KEYS[2]); message['meta'] = ''
end
redis.call('PUBLISH', ARGV[1], cjson.encode(message))
return {1, generation, epoch}
"""
"""KEYS: pins hash, meta, generation, epoch. ARGV: channel, meta action (keep/set/clear), meta value, expected
epoch, the epoch to start when there is none, then per server (field, expected value, new value), '' meaning
absent. Returns {1, generation, epoch}, {0, the field that changed, epoch} or {0, '', epoch} when the epoch is
not the one expected (the store was emptied or replaced: read it whole again)."""


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def encode(server: str, tools: Mapping[str, Any]) -> str:
    """A server's value: a one-server pin store document (checked on read like `pins.json`)."""
    return json.dumps({"format": 1, "generation": 0, "tools": {server: tools}}, separators=(",", ":"))


def decode(server: str, raw: str) -> dict[str, Any]:
    """The tools of a server's value; raises `Unusable` when it is not a sound one-server document."""
    stored: Stored = parse(raw.encode("utf-8", "surrogateescape"))
    if set(stored.tools) - {server}:
        raise Unusable(f"holds another server's entries ({', '.join(sorted(stored.tools))})")
    return stored.tools.get(server, {})


class PinKeys:
    def __init__(self, prefix: str) -> None:
        self.hash = f"{prefix}pins"
        self.meta = f"{prefix}pins:meta"
        self.generation = f"{prefix}pins:generation"
        self.epoch = f"{prefix}pins:epoch"
        self.channel = f"{prefix}pins"


class SharedPins(PinStore):
    """A `PinStore` kept in Redis (see the module's docstring). Call its methods from one thread (the event
    loop's, or a CLI's); the listener (redis_store.py) feeds `apply_message` and `apply_snapshot`."""

    def __init__(
        self,
        link: RedisLink,
        prefix: str,
        *,
        mode: QuarantineMode = "pinned",
        quarantine_new: bool = False,
        legacy_path: Any = None,
    ) -> None:
        self._link = link
        self.keys = PinKeys(prefix)
        self._raw: dict[str, str] = {}
        """Each server's value as Redis holds it (as last read or written): what a write expects."""
        self._good: dict[str, dict[str, Any]] = {}
        """Each server's tools as last read sound (kept when its value turns to garbage: the good copy)."""
        self._gen: dict[str, int] = {}
        self._damage: dict[str, str] = {}
        self._meta: dict[str, str] | None = None
        self._meta_gen = -1
        self._version = 0
        self._adopted = -1
        self._stale: set[str] | None = None
        """Servers whose mirror changed since the last adoption (None: all, or the local view diverged)."""
        self._read_once = False
        self._epoch: str | None = None
        """The store's epoch as last read or written ('' : none yet; None: never read)."""
        self._note: dict[str, str] | None = None
        """A recovery this replica found (garbage, an emptied Redis), to write as `recovered`."""
        self._result = "ok"
        super().__init__(None, mode=mode, quarantine_new=quarantine_new, legacy_path=legacy_path)
        self._script: Any = None

    # -- what the gateway and a person do (PinStore's, written to Redis) ----------------------

    def observe_server(self, server: str, tools: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Sighting]:
        sightings: list[Sighting] = []
        for _ in range(MAX_ATTEMPTS):
            self._result = "ok"
            sightings = super().observe_server(server, tools)
            if self._result == "ok" and self._note is not None and self.unconfirmed() is None:
                self._save()  # a recovery found here is written for every replica, even if the listing changed nothing
            if self._result in ("ok", "skipped"):
                break
            # "conflict": the mirror took what another replica wrote; "failed": now unconfirmed. Judge again.
        return sightings

    def approve(
        self,
        names: Iterable[str] = (),
        *,
        servers: Iterable[str] = (),
        every: bool = False,
        reviewed: Mapping[str, str] | None = None,
    ) -> list[Quarantine]:
        names, servers = list(names), list(servers)
        for _ in range(MAX_ATTEMPTS):
            self._result = "ok"
            try:
                approved = super().approve(names, servers=servers, every=every, reviewed=reviewed)
                self._version += 1  # this replica judges its listings again too (a file store's reader does)
                return approved
            except NexusError:
                if self._result == "conflict":
                    continue
                if self._result in ("failed", "skipped"):
                    why = (self.unconfirmed() or ("Redis refused the write", ""))[0]
                    raise NexusError(
                        f"could not write the pin store in Redis ({self._link.redacted_url}): {why}; nothing was "
                        "approved. Try again when Redis answers (/healthz shows the store of a running gateway)."
                    ) from None
                raise
        raise NexusError("the pin store kept changing under this approval; nothing was approved, try again")

    def changed_on_disk(self) -> bool:
        """Whether the mirror changed since the judgings were made (another replica wrote, Redis came back)."""
        return self._adopted != self._version

    def unconfirmed(self) -> tuple[str, str] | None:
        state = self._link.state
        if not self._read_once:
            return (f"the shared pin store (Redis) has not been read yet: {state.last_error}", state.since or "")
        if state.state != "ok":
            return (f"the shared pin store (Redis) cannot be reached: {state.last_error}", state.since or "")
        return None

    # -- the mirror -----------------------------------------------------------------------------

    def load_now(self) -> None:
        """Read the whole store with the blocking client (a CLI's start; the gateway's listener reads it
        asynchronously). Raises `StoreUnavailable`."""
        client = self._link.sync_client()
        pipe = client.pipeline(transaction=True)
        pipe.hgetall(self.keys.hash)
        pipe.get(self.keys.meta)
        pipe.get(self.keys.generation)
        pipe.get(self.keys.epoch)
        fields, meta, generation, epoch = self._link.call("pins", "reading the pin store", pipe.execute)
        self.apply_snapshot(fields, meta, generation, epoch)
        self._link.recovered()

    def apply_snapshot(self, fields: Mapping[Any, Any], meta: Any, generation: Any, epoch: Any = None) -> None:
        """Take the whole store as read at `generation` (HGETALL, GET meta, GET generation, GET epoch in one
        MULTI)."""
        try:
            at = int(generation or 0)
            values = {_text(field): _text(raw) for field, raw in fields.items()}
            meta_raw = "" if meta is None else _text(meta)
            epoch_now = "" if epoch is None else _text(epoch)
        except (TypeError, ValueError, UnicodeDecodeError) as exc:
            raise StoreUnavailable(f"the pin store's keys hold garbage ({type(exc).__name__}: {exc})") from None
        if not values and generation is None and self._good:
            self._restore_after_loss()
        else:
            if self._epoch and epoch_now != self._epoch:
                self._forget(epoch_now)
            for field in set(self._raw) - set(values):
                self._apply(field, "", at)
            for field, raw in values.items():
                self._apply(field, raw, at)
            self._apply_meta(meta_raw, at)
        self._epoch = epoch_now
        self._read_once = True
        self._stale = None
        self._version += 1  # judge every listing again: the mirror may differ, and trust may be confirmed now

    def apply_message(self, data: Any) -> bool:
        """Take one write another replica (or this one) published. False when the message is not one: the
        caller then reads the whole store again."""
        try:
            message = json.loads(_text(data))
            generation = int(message["generation"])
            servers = message.get("servers") or {}
            if not isinstance(servers, dict) or not all(isinstance(v, str) for v in servers.values()):
                raise ValueError("servers is not an object of strings")
        except (ValueError, TypeError, KeyError, UnicodeDecodeError) as exc:
            logger.error("state store: a pin store message is not one (%s); reading the whole store again", exc)
            return False
        epoch = message.get("epoch")
        if isinstance(epoch, str) and self._epoch is not None and epoch != self._epoch:
            logger.info("state store: the pin store in Redis has a new epoch; reading the whole store again")
            return False
        before = self._version
        for field, raw in servers.items():
            self._apply(str(field), raw, generation)
        if isinstance(message.get("meta"), str):
            self._apply_meta(message["meta"], generation)
        if self._version != before:
            logger.info("state store: the pin store changed in Redis (generation %d)", generation)
        return True

    def _apply(self, field: str, raw: str, generation: int) -> None:
        if generation <= self._gen.get(field, -1):
            return
        self._gen[field] = generation
        if raw == self._raw.get(field, ""):
            return
        if raw:
            self._raw[field] = raw
            try:
                self._good[field] = decode(field, raw)
                self._damage.pop(field, None)
            except Unusable as exc:
                self._damage[field] = exc.reason
                kept = "restored the last good copy this replica held" if field in self._good else "no good copy"
                logger.error(
                    "state store: Redis key %s field %r %s; %s: tools with no approval in it are withheld until a "
                    "person approves them (nexus-gateway tools approve)",
                    self.keys.hash,
                    field,
                    exc.reason,
                    kept,
                )
                self._note = {"at": _now(), "why": f"Redis key {self.keys.hash} field {field!r} {exc.reason}; {kept}"}
        else:
            self._raw.pop(field, None)
            self._good.pop(field, None)
            self._damage.pop(field, None)
        if self._stale is not None:
            self._stale.add(field)
        self._version += 1

    def _apply_meta(self, raw: str, generation: int) -> None:
        if generation <= self._meta_gen:
            return
        self._meta_gen = generation
        meta: dict[str, str] | None = None
        if raw:
            try:
                recovered = json.loads(raw).get("recovered")
                if not (isinstance(recovered, dict) and all(isinstance(v, str) for v in recovered.values())):
                    raise ValueError("no recovery note")
                meta = recovered
            except (ValueError, AttributeError) as exc:
                logger.error(
                    "state store: Redis key %s is not a recovery note (%s); trust is degraded", self.keys.meta, exc
                )
                meta = {"at": _now(), "why": f"Redis key {self.keys.meta} holds garbage"}
        if meta is not None:
            self._note = None  # Redis holds a recovery note for every replica: this replica's own is in it
        if _canonical(meta) != _canonical(self._meta):
            self._meta = meta
            self._version += 1

    def _restore_after_loss(self) -> None:
        """Redis is empty though it held pins: write this replica's copy back, degraded until a person approves."""
        logger.error(
            "state store: the pin store in Redis is empty though it held %d servers' pins (Redis restarted without "
            "persistence?); restored this replica's copy, and tools it holds no approval for are withheld until a "
            "person approves them",
            len(self._good),
        )
        self._raw, self._gen, self._damage, self._meta, self._meta_gen = {}, {}, {}, None, -1
        self._note = {"at": _now(), "why": "the pin store in Redis was found empty; restored a replica's copy"}

    def _forget(self, epoch: str) -> None:
        """The store in Redis is another than the one mirrored (emptied, then written by another replica; or
        replaced): take it whole, as it is now, and stay degraded until a person approves. When the replica that
        restored it wrote its recovery note (it does, in the same script as its copy), that note is taken with
        it; when there is none, this replica's note is written."""
        logger.error(
            "state store: the pin store in Redis is not the one this replica followed (epoch %r, was %r: Redis "
            "restarted without persistence, or was emptied or replaced); taking what it holds now, and tools it "
            "holds no approval for are withheld until a person approves them",
            epoch,
            self._epoch,
        )
        self._raw, self._good, self._gen, self._damage, self._meta, self._meta_gen = {}, {}, {}, {}, None, -1
        self._note = {"at": _now(), "why": "the pin store in Redis was found empty or replaced; took a replica's copy"}

    def epoch_changed(self, epoch: Any) -> bool:
        """Whether `epoch` (GET <prefix>pins:epoch, read by the activity tick) says the store was emptied or
        replaced since this mirror read it: the caller then reads it whole again."""
        if not self._epoch:
            return False
        return ("" if epoch is None else _text(epoch)) != self._epoch

    # -- PinStore's persistence ------------------------------------------------------------------

    def _reload_if_changed(self) -> bool:
        if self._adopted == self._version:
            return False
        stale = set(self._good) | set(self._tools) if self._stale is None else self._stale
        if self._stale is None:
            self._tools = {}
        for server in stale:  # a copy of what changed only: a catalog's pins are megabytes
            if self._good.get(server):
                self._tools[server] = json.loads(json.dumps(self._good[server]))
            else:
                self._tools.pop(server, None)
        self._stale = set()
        recovered = self._meta
        if recovered is None and self._note is not None:
            recovered = self._note
        self.recovered = recovered
        self._loaded = True
        self._adopted = self._version
        return True

    def _save(self) -> bool:
        if self.unconfirmed() is not None:
            self._result, self._stale = "skipped", None  # judged here, not written: the next adoption is whole
            return False
        writes: list[tuple[str, str, str]] = []
        for server in sorted(set(self._tools) | set(self._raw)):
            tools = self._tools.get(server) or {}
            held = self._raw.get(server, "")
            if held and server not in self._damage and _canonical(tools) == _canonical(self._good.get(server, {})):
                continue
            if not tools and not held:
                continue
            writes.append((server, held, encode(server, tools) if tools else ""))
        action, meta_raw = "keep", ""
        if _canonical(self.recovered) != _canonical(self._meta):
            action = "clear" if self.recovered is None else "set"
            meta_raw = "" if self.recovered is None else json.dumps({"recovered": self.recovered})
        if not writes and action == "keep":
            if self.recovered is None:
                self._note = None  # a person's approval ended a recovery this replica had not written yet
            return True
        args: list[str] = [self.keys.channel, action, meta_raw, self._epoch or "", uuid.uuid4().hex]
        for write in writes:
            args.extend(write)
        try:
            if self._script is None:
                self._script = self._link.sync_client().register_script(_WRITE)
            keys = [self.keys.hash, self.keys.meta, self.keys.generation, self.keys.epoch]
            result = self._link.call("pins", "writing the pin store", self._script, keys, args)
            ok, value, epoch = int(result[0]), result[1], _text(result[2])
        except StoreUnavailable:
            self._result, self._adopted, self._stale = "failed", -1, None
            return False
        except (TypeError, ValueError, IndexError) as exc:
            self._link.failed("writing the pin store", exc)
            self._result, self._adopted, self._stale = "failed", -1, None
            return False
        if not ok:
            field = _text(value)
            if field:
                self._refetch(field)
            else:
                self._reread()
            self._result, self._adopted, self._stale = "conflict", -1, None
            return False
        generation = int(value)
        self._epoch = epoch
        for server, _, new in writes:
            self._gen[server] = generation
            if new:
                self._raw[server], self._good[server] = new, json.loads(json.dumps(self._tools[server]))
            else:
                self._raw.pop(server, None)
                self._good.pop(server, None)
            self._damage.pop(server, None)
        if action != "keep":
            self._meta, self._meta_gen = self.recovered, generation
        if action == "set" or self.recovered is None:
            self._note = None  # written: the note in Redis is every replica's now (or a person ended it)
        self._version += 1
        self._adopted = self._version
        return True

    def _refetch(self, field: str) -> None:
        """Take what another replica wrote to `field` (a write found it changed)."""
        try:
            pipe = self._link.sync_client().pipeline(transaction=True)
            pipe.hget(self.keys.hash, field)
            pipe.get(self.keys.generation)
            pipe.get(self.keys.epoch)
            raw, generation, epoch = self._link.call("pins", "reading the pin store", pipe.execute)
        except StoreUnavailable:
            return
        if self.epoch_changed(epoch):
            self._reread()
            return
        self._apply(field, "" if raw is None else _text(raw), int(generation or 0))

    def _reread(self) -> None:
        """Read the whole store again (a write found its epoch changed: emptied or replaced)."""
        try:
            self.load_now()
        except StoreUnavailable:
            return


def _text(value: Any) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)
