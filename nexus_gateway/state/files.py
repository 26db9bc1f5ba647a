"""The state directory's files: the default store, for one machine (or processes sharing one directory).

This is what the gateway always did: the pin store is `pins.json` (catalog/pins.py: advisory lock, `.bak`
copy, a damaged file set aside), vectors are in `index-<embedder>.npz`, usage examples in
`usage_examples.json`, start times in `starts.json`, and the last calls and runs live in memory only. No
network, no background task, nothing added to any request's path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import anyio
import anyio.abc

from nexus_gateway.activity import Activity
from nexus_gateway.catalog.pins import PinStore, QuarantineMode
from nexus_gateway.state.store import Blobs, StartTimes, StoreStatus


class FileStore:
    """`Store` over `state_dir`."""

    backend: Literal["files", "redis"] = "files"

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self._pins: PinStore | None = None

    def pins(self, *, mode: QuarantineMode, quarantine_new: bool, legacy_path: Path | None) -> PinStore:
        if self._pins is None:
            self._pins = PinStore(
                self.state_dir / "pins.json", mode=mode, quarantine_new=quarantine_new, legacy_path=legacy_path
            )
        return self._pins

    def blobs(self, namespace: str) -> Blobs | None:
        return None

    def start_times(self) -> StartTimes | None:
        return None

    def activity(self) -> Activity:
        return Activity()

    def status(self) -> StoreStatus:
        return StoreStatus("files", "ok")

    async def connect(self) -> None:
        return None

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()

    def close(self) -> None:
        return None
