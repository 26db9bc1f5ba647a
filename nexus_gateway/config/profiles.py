"""Profiles: the part of the gateway one client sees.

    nexus.profiles.NAME (config.ProfileSpec) -> Profile.of(settings, NAME) -> allows(record), sees_server(name)

A client never sees or calls a tool outside its profile: the meta layer (meta/tools.py, meta/run.py) asks
`allows` before it lists, searches, describes, calls or runs a tool, and the front asks `sees_server`
before it lists or serves a resource or prompt. How a client picks its profile is the front's business
(`serve --profile`, a bearer token, `/p/NAME/mcp`, the daemon's `connect --profile`); here it is a name.
A profile is looked up by name on every request, so a reloaded config changes it for clients already
connected.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

from nexus_gateway.catalog import ToolRecord
from nexus_gateway.config import NexusSettings, ProfileSpec
from nexus_gateway.errors import ConfigError


def _matches(name: str, globs: tuple[str, ...]) -> bool:
    return any(fnmatchcase(name, glob) for glob in globs)


@dataclass(frozen=True)
class Profile:
    """A named filter over servers and tools, with the profile's own mode, pins and `run` policy."""

    name: str | None
    servers: tuple[str, ...] = ("*",)
    include_tools: tuple[str, ...] = ("*",)
    exclude_tools: tuple[str, ...] = ()
    mode: Literal["passthrough", "routed"] | None = None
    pinned_tools: tuple[str, ...] = ()
    auto_execute: bool | None = None

    @classmethod
    def of(cls, settings: NexusSettings, name: str | None) -> Profile:
        """The profile called `name` in `settings` (None: everything, the gateway's own settings)."""
        if name is None:
            return EVERYTHING
        spec = settings.profiles.get(name)
        if spec is None:
            known = ", ".join(sorted(settings.profiles)) or "none are configured (nexus.profiles)"
            raise ConfigError(f"Unknown profile {name!r}; profiles: {known}.")
        return cls.from_spec(name, spec)

    @classmethod
    def from_spec(cls, name: str, spec: ProfileSpec) -> Profile:
        return cls(
            name,
            tuple(spec.servers),
            tuple(spec.include_tools),
            tuple(spec.exclude_tools),
            spec.mode,
            tuple(spec.pinned_tools),
            spec.auto_execute,
        )

    @property
    def everything(self) -> bool:
        return self.name is None

    def sees_server(self, server: str) -> bool:
        return _matches(server, self.servers)

    def allows(self, record: ToolRecord) -> bool:
        """Whether this profile's clients may see and call `record` (a glob matches the exposed name or the
        upstream's own name)."""
        if self.everything:
            return True
        names = (record.name, record.upstream_name)
        return (
            self.sees_server(record.server)
            and any(_matches(name, self.include_tools) for name in names)
            and not any(_matches(name, self.exclude_tools) for name in names)
        )


EVERYTHING = Profile(None)
"""No profile: every tool of the gateway."""
