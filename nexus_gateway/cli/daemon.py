"""`nexus-gateway daemon [stop|status]` and `nexus-gateway connect`: one gateway shared by every host."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from nexus_gateway.cli._run import App, fail, load, run_async, setup_logging, user_errors
from nexus_gateway.config import default_state_dir, load_config
from nexus_gateway.daemon.locate import DaemonFiles
from nexus_gateway.errors import NexusError

out = Console()

ConfigOption = Annotated[
    Path,
    typer.Option("--config", "-c", help="Gateway config (its state folder holds the daemon).", envvar="NEXUS_CONFIG"),
]
daemon_app = App(help="One gateway for every host: run it, see its status, stop it.")


def _files(config: Path) -> DaemonFiles:
    """The daemon files of `config`'s state folder (the config is read, not checked: the daemon checks it)."""
    try:
        return DaemonFiles.of(default_state_dir(load_config(config)))
    except NexusError as exc:
        fail(exc)


@daemon_app.callback(invoke_without_command=True)
@user_errors
def daemon(
    ctx: typer.Context,
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="Gateway config file.", envvar="NEXUS_CONFIG")
    ] = None,
    port: Annotated[int, typer.Option(help="HTTP port on 127.0.0.1; 0 picks a free one (see daemon.json).")] = 0,
    log_level: Annotated[str, typer.Option(help="Log level (logs go to stderr).")] = "info",
) -> None:
    """Run one gateway for every host: a Unix socket for `connect` and HTTP on 127.0.0.1 (token in the state
    folder). A second daemon for the same state folder refuses to start."""
    if ctx.invoked_subcommand is not None:
        return
    from nexus_gateway.daemon.lock import DaemonLock
    from nexus_gateway.daemon.service import Daemon, refuse_second
    from nexus_gateway.errors import DaemonRunning

    if config is None:
        raise typer.BadParameter("is required", param_hint="--config")
    setup_logging(log_level)
    cfg = load(config)
    files = DaemonFiles.of(default_state_dir(cfg))
    files.make_folder()
    try:
        lock = DaemonLock(files.lock).__enter__()
    except DaemonRunning as exc:
        fail(refuse_second(files, exc))
    try:
        run_async(Daemon(cfg, files, port=port).run)
    finally:
        lock.__exit__(None, None, None)


@daemon_app.command("status")
def status(
    config: ConfigOption,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Pid, URL, uptime, upstream health and connected clients of the running daemon (exit 1: none runs)."""
    from nexus_gateway.daemon import control

    files = _files(config)
    report = run_async(lambda: control.status(files))
    if report is None:
        if as_json:
            print(json.dumps({"running": False}))
        else:
            out.print(f"no daemon runs for {files.folder}", highlight=False)
        raise typer.Exit(1)
    if as_json:
        print(json.dumps({"running": True, **report}, indent=2))
        return
    _print_status(report)


def _print_status(report: dict[str, Any]) -> None:
    out.print(
        f"daemon pid {report['pid']}, {report.get('url', '(HTTP starting)')}, up {_duration(report['uptime'])}, "
        f"mode {report['mode']}, {report['tools']} tools",
        highlight=False,
    )
    out.print(f"socket {report.get('socket', '')}; config {report['config']}", highlight=False)
    health = Table(title="Upstreams", title_justify="left")
    for column in ("server", "state", "tools", "restarts", "last error"):
        health.add_column(column)
    for upstream in report["upstreams"]:
        health.add_row(
            upstream["name"],
            upstream["state"],
            str(upstream["tools"]),
            str(upstream["restarts"]),
            escape(upstream["last_error"] or ""),
        )
    out.print(health)
    clients = Table(title=f"{len(report['clients'])} connected clients", title_justify="left")
    for column in ("client", "profile", "transport", "pid", "connected for"):
        clients.add_column(column)
    for client in report["clients"]:
        clients.add_row(
            str(client["client"]),
            client["profile"] or "(all)",
            client["transport"],
            str(client["pid"] or ""),
            _duration(time.time() - client["since"]),
        )
    out.print(clients)


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


@daemon_app.command("stop")
def stop(config: ConfigOption) -> None:
    """Stop the running daemon and its upstreams (waits until they are gone)."""
    from nexus_gateway.daemon import control

    files = _files(config)
    pid = run_async(lambda: control.stop(files))
    if pid is None:
        out.print(f"no daemon runs for {files.folder}", highlight=False)
        return
    out.print(f"stopped the daemon (pid {pid})", highlight=False)


def connect(
    config: ConfigOption,
    profile: Annotated[str | None, typer.Option(help="The profile this host uses (nexus.profiles).")] = None,
    wait: Annotated[float, typer.Option(help="Seconds to wait for a daemon that is starting.")] = 60.0,
    log_level: Annotated[str, typer.Option(help="Log level (logs go to stderr).")] = "warning",
) -> None:
    """What a host launches over stdio: attach to the running daemon (starting it if none runs) and relay MCP
    both ways. Hosts come and go; the daemon, its upstreams and its model stay."""
    from nexus_gateway.daemon.shim import connect as attach

    setup_logging(log_level)
    config = config.expanduser().resolve()
    files = _files(config)
    run_async(lambda: attach(files, config, profile=profile, wait=wait))
