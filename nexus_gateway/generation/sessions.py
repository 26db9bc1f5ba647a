"""One engine session per client session: its own sequence of the shared context, with its history.

Each run leaves a short turn in its client's session (request, arguments, the start of the result), so the
session's depth grows with use, as in the paper. Decoding a turn takes about as long as generating the
arguments, so `run` queues it (`defer`) and a background task decodes it (`settle`) after the answer has gone
out. Only a request that follows up on earlier turns (`follows_up`) is filled after them, holding the session
(`lease`: one such run at a time per client, any queued turn decoded first, so it always sees the last one);
one that stands alone is filled in a fresh sequence (`fresh`) and only `attach`es to its client's session to
queue its turn: it does not wait for the last turn to be decoded.
Past `max_depth` tokens the session is rebuilt with only its latest turn. When every engine session is
taken, the least recently used idle one is closed for the newcomer; concurrent clients share the model,
the context's preamble cells and every compiled block.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field

import anyio

from nexus_gateway.engine import Engine, Session, Turn

_BACK = re.compile(
    r"\b(?:same|again|that one|those|these|them|the last one|previous(?:ly)?|above|earlier|instead|as before|"
    r"the result|the results|the output|that (?:file|page|issue|repo|branch|message|one|result|list|event|doc))\b"
    r"|^\s*(?:and|also|now|then|what about|how about|ok(?:ay)?|same)\b",
    re.IGNORECASE,
)


def follows_up(request: str) -> bool:
    """Whether `request` refers back to an earlier turn ("the same for Berlin", "and in Tokyo?", "delete that
    file"): only then does filling its arguments read the session's history. A request that stands alone is
    filled in a fresh sequence (`SessionPool.fresh`): the tool's block is spliced at depth 0 instead of
    prefilled after the history, and earlier turns' values cannot leak into its arguments."""
    return bool(_BACK.search(request))


_CUES = frozenset(
    (  # noqa: SIM905 (a word list reads better as words)
        "a an and are at be by do does for from in is it of on or the this to with me my i you your please what which "
        "can could would how same again also now then about instead before previous earlier one ok okay there here too "
        "that those these them so just over let try"
    ).split()
)
"""Words that say only how a follow-up relates to the last request ("and", "again", "what about", "the same for")."""
_WORD = re.compile(r"[^\s,;!?()\[\]]+")


def only_new_values(request: str) -> bool:
    """Whether a follow-up (`follows_up`) gives only new values for the last request's task, at most one word of
    its own beside its cue words, names and values: "and in Tokyo again?", "the same for Berlin", "what about
    tomorrow?", "now ~/b.txt". Such a request is routed by the request it follows; "what is the weather in Paris
    again?" and "delete that file" say their task themselves."""
    if not follows_up(request):
        return False
    own = 0
    for position, word in enumerate(_WORD.findall(request.strip())):
        word = word.strip("'\".:")
        if not word.isalpha() or (position and word[0].isupper()):  # a value: a number, a path, a name
            continue
        own += len(word) > 2 and word.lower() not in _CUES
    return own <= 1


PENDING_TURNS = 6
"""Turns queued for a session at most (`defer`): requests sent back to back queue theirs until the engine is idle
(meta/run.py), and a session holds a few turns before it is rebuilt from its latest."""


@dataclass
class _Entry:
    session: Session
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    users: int = 0
    pending: list[Turn] = field(default_factory=list)
    """Turns queued by `defer`, not yet decoded into the session."""


class SessionPool:
    def __init__(self, engine: Engine, capacity: int, *, max_depth: int = 256) -> None:
        self.engine = engine
        self.capacity = capacity
        self.max_depth = max_depth
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._guard = anyio.Lock()
        self._released = anyio.Event()
        self._forks = 0
        """Sessions lent by `fork` and `fresh`, counted against `capacity` like the clients' own."""
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._entries)

    async def _entry(self, key: Hashable) -> _Entry:
        while True:
            async with self._guard:
                entry = self._entries.get(key)
                if entry is None and len(self._entries) + self._forks >= self.capacity:
                    victim = next((k for k, e in self._entries.items() if e.users == 0), None)
                    if victim is not None:
                        await self.engine.close_session(self._entries.pop(victim).session)
                        self.evictions += 1
                if entry is None and len(self._entries) + self._forks < self.capacity:
                    entry = self._entries[key] = _Entry(await self.engine.open_session())
                if entry is not None:
                    self._entries.move_to_end(key)
                    entry.users += 1
                    return entry
                released = self._released
            await released.wait()  # every session is busy: wait for one to finish

    @asynccontextmanager
    async def lease(self, key: Hashable) -> AsyncIterator[Session]:
        """The engine session of `key` (opened, or taken from the least recently used), held exclusively, its
        queued turns decoded first."""
        async with self.attach(key) as session, self.hold(key):
            yield session

    @asynccontextmanager
    async def attach(self, key: Hashable) -> AsyncIterator[Session]:
        """The engine session of `key` (opened, or taken from the least recently used), kept from eviction but
        not held: its history may still be growing (`settle`). For a request filled elsewhere (`fresh`) that
        only needs to know the session and queue its turn (`defer`): it does not wait for the last turn."""
        entry = await self._entry(key)
        try:
            yield entry.session
        finally:
            entry.users -= 1
            self._released.set()
            self._released = anyio.Event()

    @asynccontextmanager
    async def hold(self, key: Hashable) -> AsyncIterator[None]:
        """`key`'s session (inside `attach`) held exclusively, its queued turns decoded first."""
        entry = self._entries[key]
        async with entry.lock:
            while entry.pending:
                await self._append_turn(entry, entry.pending.pop(0))
            yield

    def fork(self, session: Session) -> AbstractAsyncContextManager[Session | None]:
        """A session holding what the leased `session` holds, to decode a second candidate beside the first
        (engine `fork_session`), closed on exit; None when every session is taken, and the caller decodes
        one after the other. A fork never evicts a client's session."""
        return self._lent(lambda: self.engine.fork_session(session))

    def fresh(self) -> AbstractAsyncContextManager[Session | None]:
        """A session holding only the preamble (for a request that does not follow up on the history), closed
        on exit; counted like a fork; None when every session is taken (the caller uses the client's)."""
        return self._lent(self.engine.open_session)

    @asynccontextmanager
    async def _lent(self, open_session: Callable[[], Awaitable[Session]]) -> AsyncIterator[Session | None]:
        async with self._guard:
            lent = None
            if len(self._entries) + self._forks < self.capacity:
                lent = await open_session()
                self._forks += 1
        try:
            yield lent
        finally:
            if lent is not None:
                with anyio.CancelScope(shield=True):
                    try:
                        await self.engine.close_session(lent)
                    finally:
                        self._forks -= 1
                        self._released.set()
                        self._released = anyio.Event()

    async def depth(self, session: Session) -> int:
        return await self.engine.depth(session)

    def defer(self, key: Hashable, turn: Turn) -> None:
        """Queue a turn for `key`'s session (inside `lease`): decoded by `settle`, or before its next lease."""
        entry = self._entries.get(key)
        if entry is not None:
            entry.pending.append(turn)
            del entry.pending[:-PENDING_TURNS]  # the oldest would not stay in the session's depth anyway

    async def settle(self, key: Hashable) -> None:
        """Decode the turns queued for `key`, if its session is still there."""
        entry = self._entries.get(key)
        if entry is not None and entry.pending:
            async with self.lease(key):
                pass

    async def _append_turn(self, entry: _Entry, turn: Turn) -> None:
        await self.engine.append_turn(entry.session, turn, max_depth=self.max_depth)
