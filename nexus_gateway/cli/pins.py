"""`nexus-gateway tools diff` and `tools approve`: review and release quarantined tools.

Both read and write the pin store in the gateway's state directory only; they start no upstream. The
store holds what the last gateway to connect saw (a running `serve`, or `nexus-gateway tools`). A running
gateway notices an approval within a second and tells its clients that the tool list changed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from nexus_gateway.catalog.pins import PinStore
from nexus_gateway.config import default_state_dir, load_config
from nexus_gateway.errors import NexusError

out = Console()

ConfigOption = Annotated[
    Path,
    typer.Option(
        "--config", "-c", help="Gateway config (a Claude Desktop style mcpServers file).", envvar="NEXUS_CONFIG"
    ),
]
Names = Annotated[list[str] | None, typer.Argument(help="Exposed tool names (server__tool).", show_default=False)]


def _store(config: Path) -> PinStore:
    return PinStore(default_state_dir(load_config(config)) / "pins.json")


def diff(
    config: ConfigOption,
    names: Names = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (with each diff as text).")] = False,
) -> None:
    """Show what changed in quarantined tools: the pinned definition against the one the upstream lists now."""
    quarantined = _store(config).quarantined()
    if names:
        unknown = sorted(set(names) - {quarantine.name for quarantine in quarantined})
        if unknown:
            listed = ", ".join(quarantine.name for quarantine in quarantined) or "none"
            raise NexusError(f"not quarantined: {', '.join(unknown)} (quarantined now: {listed})")
        quarantined = [quarantine for quarantine in quarantined if quarantine.name in names]
    if as_json:
        print(json.dumps([q.to_json() | {"diff": q.diff()} for q in quarantined], indent=2))
        return
    if not quarantined:
        out.print("No quarantined tools.")
        return
    for quarantine in quarantined:
        out.rule(escape(quarantine.name), align="left")
        out.print(escape(quarantine.why), highlight=False)
        from rich.syntax import Syntax  # pygments: only when a diff is shown

        out.print(Syntax(quarantine.diff(), "diff", word_wrap=True, background_color="default"))
    out.print(f"Approve with: nexus-gateway tools approve {' '.join(q.name for q in quarantined)} -c {config}")


def approve(
    config: ConfigOption,
    names: Names = None,
    servers: Annotated[
        list[str] | None, typer.Option("--server", help="Approve every quarantined tool of this server.")
    ] = None,
    every: Annotated[bool, typer.Option("--all", help="Approve every quarantined tool.")] = False,
) -> None:
    """Pin the definition a quarantined tool has now, so the host sees it (review it first with `tools diff`)."""
    if not (names or servers or every):
        raise NexusError("say what to approve: tool names, --server NAME or --all")
    approved = _store(config).approve(names or (), servers=servers or (), every=every)
    if not approved:
        out.print("Nothing to approve: no tool matched is quarantined.")
        return
    for quarantine in approved:
        changed = ", ".join(quarantine.changes) or quarantine.reason
        out.print(f"approved {escape(quarantine.name)} ({escape(changed)})", highlight=False)
    out.print("A running gateway serves the approved definitions within a second.")
