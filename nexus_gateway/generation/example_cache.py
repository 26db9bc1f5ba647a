"""The usage examples written so far, by tool definition: `usage_examples.json` in the state dir.

    {"format": 1, "tools": {"<content hash>": {"examples": ["...", ...], "model": "<model fingerprint>"}}}

Keyed by each tool's content hash (catalog.content_hash: name, description, schemas), so a definition that
changes gets new examples and an unchanged one is never written again, across restarts and by every
session and gateway that shares the state dir. Each entry records the model that wrote it. The file is
derived state (runtime/statefile.py): written atomically, a bad one moved aside and rebuilt, never fatal.

Replicas sharing a store (state/: Redis) also share the entries, by the same hash (`pull`, `push`): a replica
writes no examples for a definition another replica already wrote them for.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nexus_gateway.runtime.statefile import StateInvalid, load_json, save_bytes

if TYPE_CHECKING:
    from nexus_gateway.state import Blobs

logger = logging.getLogger(__name__)

FORMAT = 1
FILE_NAME = "usage_examples.json"


def _entries(data: Any) -> dict[str, tuple[tuple[str, ...], str]]:
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("tools"), dict):
        raise StateInvalid(f"not a format-{FORMAT} usage examples file")
    entries = {}
    for digest, entry in data["tools"].items():
        examples, model = (entry.get("examples"), entry.get("model")) if isinstance(entry, dict) else (None, None)
        if not isinstance(examples, list) or not all(isinstance(e, str) for e in examples):
            raise StateInvalid(f"tool {digest}: examples is not a list of strings")
        entries[digest] = (tuple(examples), model if isinstance(model, str) else "")
    return entries


class ExampleCache:
    """Examples by tool content hash, loaded from and saved to `path` (None: in memory only). Thread-safe."""

    def __init__(self, path: Path | None, *, shared: Blobs | None = None) -> None:
        """`shared`: entries shared by replicas, by the same hash (the store's `examples` blobs)."""
        self.path = path
        self.shared = shared
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[tuple[str, ...], str]] = {}
        if path is not None:
            self._entries = load_json(path, _entries) or {}

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, digest: object) -> bool:
        return digest in self._entries

    def get(self, digest: str) -> tuple[str, ...] | None:
        entry = self._entries.get(digest)
        return None if entry is None else entry[0]

    def model_of(self, digest: str) -> str | None:
        entry = self._entries.get(digest)
        return None if entry is None else entry[1]

    def put(self, digest: str, examples: Iterable[str], model: str) -> None:
        with self._lock:
            self._entries[digest] = (tuple(examples), model)

    def examples(self, digests: Iterable[str] | None = None) -> dict[str, list[str]]:
        """Every entry's examples (or those of `digests` that have some): what routing indexes."""
        with self._lock:
            chosen = self._entries if digests is None else {d: self._entries[d] for d in digests if d in self._entries}
            return {digest: list(examples) for digest, (examples, _) in chosen.items() if examples}

    def pull(self, digests: Sequence[str]) -> int:
        """Take the entries other replicas wrote for these digests (blocking: a worker thread). Returns how many."""
        wanted = [digest for digest in digests if digest not in self._entries]
        if self.shared is None or not wanted:
            return 0
        taken = 0
        for digest, blob in zip(wanted, self.shared.get_many(wanted), strict=True):
            if blob is None:
                continue
            try:
                [(_, entry)] = _entries({"format": FORMAT, "tools": {digest: json.loads(blob)}}).items()
            except (ValueError, TypeError, AttributeError):  # StateInvalid is a ValueError
                logger.warning("shared usage examples of %s are not an entry; writing them here", digest)
                continue
            with self._lock:
                self._entries[digest] = entry
            taken += 1
        return taken

    def push(self, digests: Iterable[str]) -> None:
        """Share these entries with the other replicas (blocking: a worker thread)."""
        if self.shared is None:
            return
        with self._lock:
            items = {
                digest: json.dumps({"examples": list(examples), "model": model}).encode("utf-8")
                for digest in digests
                if (entry := self._entries.get(digest)) is not None
                for examples, model in [entry]
            }
        self.shared.put_many(items)

    def save(self) -> bool:
        """Write the cache atomically; False (and a warning) when it cannot be written or has no path."""
        if self.path is None:
            return False
        with self._lock:
            tools = {d: {"examples": list(e), "model": m} for d, (e, m) in sorted(self._entries.items())}
        text = json.dumps({"format": FORMAT, "tools": tools}, ensure_ascii=False, indent=1)
        return save_bytes(self.path, text.encode("utf-8") + b"\n")


def load_examples(path: Path) -> Mapping[str, list[str]]:
    """The examples of a cache file (an `index examples --out` file), by content hash; empty when missing."""
    return ExampleCache(path).examples()
