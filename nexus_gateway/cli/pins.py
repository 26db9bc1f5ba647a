"""`nexus-gateway tools diff` and `tools approve`: review and release quarantined tools.

Both read and write the pin store in the gateway's state directory only; they start no upstream. The
store holds what the last gateway to connect saw (a running `serve`, or `nexus-gateway tools`). A running
gateway notices an approval within a second and tells its clients that the tool list changed.

An approval names what was reviewed. `tools diff` shows each definition's hash; `tools approve NAME --hash H`
pins that definition, and is refused (with the new diff) when the upstream lists another one now. Without
`--hash`, at a terminal, `approve` shows the diffs and asks, then binds the answer to the hashes it showed;
elsewhere (a script, a pipe) it refuses, naming each hash. `--all` and `--server` outside a terminal need
`--yes`, which approves whatever the upstreams list at that moment, unseen.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from nexus_gateway.catalog.pins import PinStore, Quarantine
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
    """The gateway's pin store: `pins.json` in its state directory, or Redis (`nexus.cluster.redis_url`)."""
    loaded = load_config(config)
    if loaded.nexus.cluster.redis_url:
        from nexus_gateway.state import open_store
        from nexus_gateway.state.redis_store import RedisStore

        store = open_store(loaded.nexus.cluster, default_state_dir(loaded))
        assert isinstance(store, RedisStore)
        pins = store.shared_pins()
        pins.load_now()  # raises StoreUnavailable (a NexusError) when Redis does not answer
        return pins
    return PinStore(default_state_dir(loaded) / "pins.json")


def _trust_line(store: PinStore) -> None:
    trust = store.trust
    if trust.state != "ok":
        out.print(
            f"[red]Trust degraded[/] since {trust.since}: {escape(trust.why or '')}. Tools it holds no approval "
            "for are withheld until approved; any approval here ends this state.",
            highlight=False,
        )


def _show(quarantine: Quarantine) -> None:
    from rich.syntax import Syntax  # pygments: only when a diff is shown

    out.rule(escape(quarantine.name), align="left")
    out.print(escape(quarantine.why), highlight=False)
    out.print(f"definition hash: {quarantine.hash}", highlight=False)
    out.print(Syntax(quarantine.diff(), "diff", word_wrap=True, background_color="default"))


def diff(
    config: ConfigOption,
    names: Names = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (with each diff as text).")] = False,
) -> None:
    """Show what changed in quarantined tools: the pinned definition against the one the upstream lists now,
    and the hash to approve it with."""
    store = _store(config)
    quarantined = store.quarantined()
    if names:
        unknown = sorted(set(names) - {quarantine.name for quarantine in quarantined})
        if unknown:
            listed = ", ".join(quarantine.name for quarantine in quarantined) or "none"
            raise NexusError(f"not quarantined: {', '.join(unknown)} (quarantined now: {listed})")
        quarantined = [quarantine for quarantine in quarantined if quarantine.name in names]
    if as_json:
        print(json.dumps([q.to_json() | {"diff": q.diff()} for q in quarantined], indent=2))
        return
    _trust_line(store)
    if not quarantined:
        out.print("No quarantined tools.")
        return
    for quarantine in quarantined:
        _show(quarantine)
        out.print(
            f"Approve with: nexus-gateway tools approve {quarantine.name} --hash {quarantine.hash} -c {config}",
            highlight=False,
        )


def approve(
    config: ConfigOption,
    names: Names = None,
    servers: Annotated[
        list[str] | None, typer.Option("--server", help="Approve every quarantined tool of this server.")
    ] = None,
    every: Annotated[bool, typer.Option("--all", help="Approve every quarantined tool.")] = False,
    hashes: Annotated[
        list[str] | None,
        typer.Option("--hash", help="The definition hash `tools diff` showed, one per NAME, in order."),
    ] = None,
    yes: Annotated[
        bool, typer.Option("--yes", help="With --all or --server outside a terminal: approve unseen.")
    ] = False,
) -> None:
    """Pin the definition a quarantined tool has now, so the host sees it: the one you reviewed (`--hash`,
    from `tools diff`), or, at a terminal, the one shown and confirmed here."""
    if not (names or servers or every):
        raise NexusError("say what to approve: tool names, --server NAME or --all")
    store = _store(config)
    reviewed: dict[str, str] = {}
    bound = bool(hashes) or sys.stdin.isatty()
    if hashes:
        if servers or every or len(hashes) != len(names or ()):
            raise NexusError("--hash names one reviewed definition per tool name, in order (not with --all/--server)")
        reviewed = dict(zip(names or (), hashes, strict=True))
    elif sys.stdin.isatty():
        shown = [q for q in store.quarantined() if every or q.name in (names or ()) or q.server in (servers or ())]
        for quarantine in shown:
            _show(quarantine)
        if shown and not typer.confirm(f"Approve the {len(shown)} definition(s) shown above?", default=False):
            raise NexusError("nothing was approved")
        reviewed = {quarantine.name: quarantine.hash for quarantine in shown}
    elif names:
        pending = {quarantine.name: quarantine for quarantine in store.quarantined()}
        hints = [f"{name} --hash {pending[name].hash}" for name in names if name in pending]
        raise NexusError(
            "refusing to approve a definition nobody reviewed here: review it with `nexus-gateway tools diff`, then "
            f"approve what you saw with --hash (now: {'; '.join(hints) or 'none of these is quarantined'})"
        )
    elif not yes:
        raise NexusError("--all and --server outside a terminal approve unseen definitions: add --yes to mean it")
    degraded = store.trust.state != "ok"
    if bound:  # exactly what was reviewed: a tool quarantined since is not among it
        approved = store.approve(reviewed=reviewed)
    else:
        approved = store.approve(names or (), servers=servers or (), every=every)
    if not approved:
        out.print("Nothing to approve: no tool matched is quarantined.")
    for quarantine in approved:
        changed = ", ".join(quarantine.changes) or quarantine.reason
        out.print(f"approved {escape(quarantine.name)} ({escape(changed)}, {quarantine.hash})", highlight=False)
    if approved:
        out.print("A running gateway serves the approved definitions within a second.")
    if degraded:
        out.print("The pin store's recovery is acknowledged: trust is ok again.")
