"""`nexus-gateway servers list|enable|disable`: switch upstreams of the running daemon.

It talks to the daemon's HTTP front (server/control.py) at the URL in `<state_dir>/daemon/daemon.json`
with the bearer token in `<state_dir>/daemon/token`; the daemon remembers the switch in its state
directory, so a disabled server stays off across restarts until it is enabled again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from nexus_gateway.cli._run import fail
from nexus_gateway.config import default_state_dir, load_config
from nexus_gateway.errors import NexusError

app = typer.Typer(help="List, enable and disable the upstream servers of the running daemon.", no_args_is_help=True)
out = Console()
NO_DAEMON = "no daemon running; start one with `nexus-gateway daemon`"

ConfigOption = Annotated[
    Path,
    typer.Option(
        "--config", "-c", help="Gateway config (a Claude Desktop style mcpServers file).", envvar="NEXUS_CONFIG"
    ),
]
Name = Annotated[str, typer.Argument(help="The server's name in the config file.", show_default=False)]


def _daemon(config: Path) -> tuple[str, str | None]:
    """The running daemon's URL and bearer token, from its state directory."""
    folder = default_state_dir(load_config(config)) / "daemon"
    try:
        url = json.loads((folder / "daemon.json").read_text(encoding="utf-8"))["url"]
    except (OSError, ValueError, KeyError, TypeError):
        raise NexusError(NO_DAEMON) from None
    try:
        token: str | None = (folder / "token").read_text(encoding="utf-8").strip() or None
    except OSError:
        token = None
    return str(url).rstrip("/"), token


def _request(config: Path, method: str, path: str) -> dict[str, Any]:
    import httpx  # here, not at the top: every command loads this module, and `serve` must start fast

    try:
        url, token = _daemon(config)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        try:
            response = httpx.request(method, f"{url}{path}", headers=headers, timeout=60)
        except httpx.ConnectError:
            raise NexusError(NO_DAEMON) from None
        except httpx.HTTPError as exc:
            raise NexusError(f"the daemon at {url} did not answer: {exc}") from None
        body: dict[str, Any] = response.json() if response.content else {}
        if response.status_code >= 400:
            raise NexusError(body.get("message") or f"the daemon answered {response.status_code}")
        return body
    except NexusError as exc:
        fail(exc)


def _show(rows: list[dict[str, Any]]) -> None:
    table = Table(title="Servers", title_justify="left")
    for column in ("server", "enabled", "state", "tools", "restarts", "last error"):
        table.add_column(column)
    for row in rows:
        enabled = "yes" if row["enabled"] else f"no ({row['disabled_in']})"
        state = row["state"]
        table.add_row(
            row["name"], enabled, state, str(row["tools"]), str(row["restarts"]), escape(row["last_error"] or "")
        )
    out.print(table)


@app.command("list")
def list_servers(
    config: ConfigOption, as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False
) -> None:
    """Every configured server: whether it is enabled, its health and tool count."""
    rows = _request(config, "GET", "/control/servers")["servers"]
    if as_json:
        print(json.dumps(rows, indent=2))
    else:
        _show(rows)


@app.command()
def enable(config: ConfigOption, name: Name) -> None:
    """Start a server that was disabled (it stays on across restarts)."""
    row = _request(config, "POST", f"/control/servers/{name}/enable")
    out.print(f"{name}: enabled" + ("" if row["changed"] else " (it already was)"))


@app.command()
def disable(config: ConfigOption, name: Name) -> None:
    """Stop a server and hide its tools (it stays off across restarts, until `enable`)."""
    row = _request(config, "POST", f"/control/servers/{name}/disable")
    out.print(f"{name}: disabled" + ("" if row["changed"] else " (it already was)"))
