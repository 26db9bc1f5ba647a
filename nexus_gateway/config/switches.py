"""Servers turned off at run time (`nexus-gateway servers disable NAME`), kept in the state directory.

    <state_dir>/servers.json   {"disabled": ["name", ...]}

The config file's own `"disabled": true` is the user's; this is the switch the CLI and the control
endpoint flip on a running gateway, remembered across restarts. A server counts as running when the
config enables it and no switch turns it off.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nexus_gateway.runtime.statefile import StateInvalid, load_json, save_json


def _disabled(data: Any) -> set[str]:
    names = data.get("disabled") if isinstance(data, dict) else None
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise StateInvalid("'disabled' must be a list of server names")
    return set(names)


class ServerSwitches:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.disabled: set[str] = load_json(path, _disabled) or set()

    def set(self, name: str, *, enabled: bool) -> bool:
        """Turn `name` on or off; True when that changed anything (and was saved)."""
        if (name not in self.disabled) == enabled:
            return False
        if enabled:
            self.disabled.discard(name)
        else:
            self.disabled.add(name)
        save_json(self.path, {"disabled": sorted(self.disabled)})
        return True
