"""Hot reload and run-time switches: the running upstreams brought in line with the config.

    config file changes -> ConfigWatcher -> load (the CLI's: load_config + preflight) -> reconcile
    `servers disable NAME` (control endpoint) -> switch -> ServerSwitches (state dir) -> reconcile

`reconcile` starts the servers that are new, stops the ones that are gone (or switched off), restarts
the ones whose entry changed and leaves every other one alone (same process, same session). Profiles,
`pinned` and `auto_execute` take effect at once; other `nexus` settings when the gateway next starts
(logged). Hosts are told through the usual list_changed notifications. A config that does not load is
rejected with one log line, and the running config stays.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import anyio

from nexus_gateway.config import GatewayConfig
from nexus_gateway.errors import NexusError
from nexus_gateway.gateway import Gateway

logger = logging.getLogger(__name__)

LIVE_SETTINGS = ("profiles", "pinned", "auto_execute")
"""`nexus` settings a reload applies to the running gateway."""
_OVERRIDDEN = ("host", "port", "mode", "workspace_folder")
"""Settings the command line may override: a reload does not report them as changed."""
WATCH_DEBOUNCE_MS = 100
"""How long the watcher lets a burst of writes (an editor's save) settle before it reads the file."""
RECHECK_SECONDS = 2.0
"""With no file event for this long, the watcher compares the file's content anyway (one read)."""


@dataclass(frozen=True)
class ServerChanges:
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    restarted: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.restarted)

    def summary(self) -> str:
        parts = [
            f"{sign}{', '.join(names)}"
            for sign, names in (("+", self.added), ("-", self.removed), ("~", self.restarted))
            if names
        ]
        return " ".join(parts) or "no server changed"


async def reconcile(gateway: Gateway, config: GatewayConfig) -> ServerChanges:
    """Make `config` the running one: its servers (minus the switched-off ones) and its live settings."""
    async with gateway.reconfiguring:
        running = {name: upstream.spec for name, upstream in gateway.pool.upstreams.items()}
        wanted = gateway.wanted_servers(config)
        changes = ServerChanges(
            added=tuple(name for name in wanted if name not in running),
            removed=tuple(name for name in running if name not in wanted),
            restarted=tuple(name for name in wanted if name in running and running[name] != wanted[name]),
        )
        profiles_changed = _apply_settings(gateway, config)
        gateway.config = replace(gateway.config, servers=config.servers, raw=config.raw)
        gateway.catalog.set_prefixes(gateway.catalog_prefixes())
        async with anyio.create_task_group() as tg:  # stopping waits for each process to end: all at once
            for name in (*changes.removed, *changes.restarted):
                tg.start_soon(gateway.remove_upstream, name)
        for name in (*changes.restarted, *changes.added):
            gateway.add_upstream(name, wanted[name])
        if profiles_changed:
            await gateway.announce(frozenset({"tools", "resources", "prompts"}))
        return changes


def _apply_settings(gateway: Gateway, config: GatewayConfig) -> bool:
    """Apply the live settings of `config`; log the others that changed. True when the profiles changed."""
    settings, new = gateway.settings, config.nexus
    profiles_changed = settings.profiles != new.profiles or settings.pinned != new.pinned
    for name in LIVE_SETTINGS:
        setattr(settings, name, getattr(new, name))
    old_rest = settings.model_dump(exclude={*LIVE_SETTINGS, *_OVERRIDDEN})
    new_rest = new.model_dump(exclude={*LIVE_SETTINGS, *_OVERRIDDEN})
    if later := sorted(key for key in old_rest.keys() | new_rest.keys() if old_rest.get(key) != new_rest.get(key)):
        logger.warning("config reload: nexus settings %s apply when the gateway restarts", ", ".join(later))
    return profiles_changed


async def switch(gateway: Gateway, name: str, *, enabled: bool) -> bool:
    """Turn server `name` on or off at run time (remembered in the state directory); True if that changed
    anything. An unknown name is a `NexusError`."""
    if name not in gateway.config.servers:
        known = ", ".join(sorted(gateway.config.servers)) or "none"
        raise NexusError(f"No server {name!r} is configured; servers: {known}.")
    if not gateway.switches.set(name, enabled=enabled):
        return False
    changes = await reconcile(gateway, gateway.config)
    logger.info("server %s %s (%s)", name, "enabled" if enabled else "disabled", changes.summary())
    return True


class ConfigWatcher:
    """Reload `path` whenever its content changes (watchfiles: the file's folder, not recursively, so an
    editor that saves by renaming a new file over it is seen too)."""

    def __init__(self, gateway: Gateway, path: Path, load: Callable[[Path], GatewayConfig]) -> None:
        self.gateway = gateway
        self.path = path
        self.load = load
        self._applied = self._digest()

    def _digest(self) -> str | None:
        try:
            return hashlib.sha256(self.path.read_bytes()).hexdigest()
        except OSError:
            return None

    async def run(self) -> None:
        """Watch until cancelled; where the folder cannot be watched (no inotify watches left, say), look
        at the file every RECHECK_SECONDS instead."""
        try:
            await self._watch()
        except OSError as exc:
            logger.warning("cannot watch %s (%s); checking it every %gs instead", self.path, exc, RECHECK_SECONDS)
        while True:
            await anyio.sleep(RECHECK_SECONDS)
            await self.reload()

    async def _watch(self) -> None:
        from watchfiles import awatch

        stop = anyio.Event()

        async def stop_when_cancelled() -> None:
            """The watch blocks a thread; told to stop, it returns within one step (20 ms) when cancelled."""
            try:
                await anyio.sleep_forever()
            finally:
                stop.set()

        logger.info("watching %s for changes", self.path)
        watching = awatch(
            self.path.parent,
            recursive=False,
            debounce=WATCH_DEBOUNCE_MS,
            step=20,
            stop_event=stop,
            rust_timeout=int(RECHECK_SECONDS * 1000),
            yield_on_timeout=True,  # an empty batch every RECHECK_SECONDS: a change made before the watch began
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(stop_when_cancelled)
            async for changes in watching:
                if not changes or any(Path(changed).name == self.path.name for _, changed in changes):
                    await self.reload()

    async def reload(self) -> ServerChanges | None:
        """Apply the file if its content changed since it was last applied; None when unchanged or rejected."""
        digest = self._digest()
        if digest is None or digest == self._applied:
            return None
        try:
            config = self.load(self.path)
        except NexusError as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            logger.error("config reload rejected, still serving the previous config: %s", first)
            self._applied = digest  # the same broken content is not reported again
            return None
        self._applied = digest
        try:
            changes = await reconcile(self.gateway, config)
        except Exception:  # boundary: a failed reload must not take the running gateway down
            logger.exception("config reload failed part way; the servers that did change keep running")
            return None
        logger.info("config reloaded: %s", changes.summary())
        return changes
