"""Where the gateway keeps what it must remember or share: behind one `Store`, in files or in Redis.

    store.py  Store       what the gateway asks of either; StoreStatus, Blobs, StartTimes
    files.py  FileStore   the state directory's files: one machine, the default, no Redis
    redis_store.py        RedisStore: replicas sharing one Redis (`nexus.cluster.redis_url`)
    redis_pins.py         the pin store (approvals, quarantine) in Redis, mirrored in memory
    _link.py              the Redis connection: clients, round trips counted, ok or degraded

What is shared: pinned definitions, approvals and quarantine (`pins`); embedding vectors and generated usage
examples by content hash (`blobs`: a replica never embeds what another embedded); upstream start times
(`start_times`); the last calls and `run` traces the dashboard shows (`activity`, bounded). The hot path
(`tools/call`) never waits on the store: trust decisions are made from memory (docs/state.md).
"""

from __future__ import annotations

from pathlib import Path

from nexus_gateway.config import ClusterSettings
from nexus_gateway.errors import ConfigError
from nexus_gateway.state.store import Blobs, StartTimes, Store, StoreStatus

__all__ = ["Blobs", "StartTimes", "Store", "StoreStatus", "open_store"]


def open_store(cluster: ClusterSettings, state_dir: Path) -> Store:
    """The store the settings ask for: Redis when `cluster.redis_url` is set, else the state directory."""
    if cluster.redis_url:
        try:
            from nexus_gateway.state.redis_store import RedisStore  # redis-py: only for a cluster
        except ModuleNotFoundError as exc:
            raise ConfigError(
                f"nexus.cluster.redis_url is set but {exc.name!r} is not installed: "
                "pip install 'nexus-gateway[cluster]' (or unset redis_url for the state directory)"
            ) from None

        return RedisStore(cluster.redis_url, state_dir, prefix=cluster.key_prefix, timeout=cluster.timeout)
    from nexus_gateway.state.files import FileStore

    return FileStore(state_dir)
