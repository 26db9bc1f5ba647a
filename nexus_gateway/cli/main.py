"""`nexus-gateway`: serve, inspect the catalog, check and import configs, benchmark.

Errors meant for users (`NexusError`) are printed without a traceback and exit with status 2.
"""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from nexus_gateway import __version__
from nexus_gateway.cli import auth as auth_cli
from nexus_gateway.cli import bench, evals, import_claude, index, pins, servers
from nexus_gateway.cli import daemon as daemon_cli
from nexus_gateway.cli import engine as engine_cli
from nexus_gateway.cli._run import App, load, run_async, setup_logging
from nexus_gateway.config import GatewayConfig, StdioServer
from nexus_gateway.config.profiles import Profile
from nexus_gateway.errors import ConfigError
from nexus_gateway.runtime import _heap, _startup_signals
from nexus_gateway.upstreams._prelaunch import discard, first_launches, prelaunch

app = App(
    name="nexus-gateway",
    help="One MCP server in front of many: semantic tool routing, compressed signatures, a local model.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
config_app = App(help="Work with config files.", no_args_is_help=True)
app.add_typer(config_app, name="config")
app.add_typer(bench.app, name="bench")
app.add_typer(evals.eval_app, name="eval")
app.add_typer(evals.calibrate_app, name="calibrate")
evals.calibrate_app.command("splice")(engine_cli.calibrate_splice)
app.command("compile")(engine_cli.compile_command)
app.command("import-claude")(import_claude.import_claude)
app.add_typer(daemon_cli.daemon_app, name="daemon")
app.command("connect")(daemon_cli.connect)
tools_app = App(help="The catalog; review and approve quarantined tools.")
app.add_typer(tools_app, name="tools")
tools_app.command("diff")(pins.diff)
tools_app.command("approve")(pins.approve)
app.add_typer(servers.app, name="servers")
app.add_typer(index.index_app, name="index")
app.add_typer(auth_cli.auth_app, name="auth")

out = Console()

ConfigOption = Annotated[
    Path,
    typer.Option(
        "--config", "-c", help="Gateway config (a Claude Desktop style mcpServers file).", envvar="NEXUS_CONFIG"
    ),
]


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    if version:
        out.print(f"nexus-gateway {__version__}")
        raise typer.Exit(0)


@app.command()
def serve(
    config: ConfigOption,
    transport: Annotated[str, typer.Option(help="stdio | sse | http (http serves both /mcp and /sse).")] = "stdio",
    host: Annotated[str | None, typer.Option(help="HTTP bind address (default: nexus.host, 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="HTTP port; 0 picks a free one (default: nexus.port).")] = None,
    mode: Annotated[str | None, typer.Option(help="passthrough | routed | auto (default: nexus.mode).")] = None,
    profile: Annotated[
        str | None, typer.Option(help="Serve only this profile's tools (nexus.profiles); default: all.")
    ] = None,
    watch: Annotated[
        bool | None, typer.Option("--watch/--no-watch", help="Reload the config file when it changes (nexus.watch).")
    ] = None,
    log_level: Annotated[str, typer.Option(help="Log level (logs go to stderr).")] = "info",
) -> None:
    """Run the gateway: over stdio for a host that launches it, or over HTTP (streamable HTTP and SSE)."""
    if transport not in ("stdio", "sse", "http"):
        raise typer.BadParameter("must be stdio, sse or http", param_hint="--transport")
    if mode is not None and mode not in ("passthrough", "routed", "auto"):
        raise typer.BadParameter("must be passthrough, routed or auto", param_hint="--mode")
    setup_logging(log_level)
    cfg = load(config, mode)
    if host is not None:
        cfg.nexus.host = host
    if port is not None:
        cfg.nexus.port = port
    try:
        Profile.of(cfg.nexus, profile)
    except ConfigError as exc:
        raise ConfigError(f"{cfg.path}: --profile: {exc}") from None
    try:
        _serve(cfg, transport=transport, profile=profile, watch=watch)
    except KeyboardInterrupt:  # SIGINT or SIGTERM before the event loop ran (_startup_signals.py)
        raise typer.Exit(130) from None


def _serve(cfg: GatewayConfig, *, transport: str, profile: str | None, watch: bool | None) -> None:
    """`serve` once its options are checked: the upstreams started early are ended however it ends."""
    try:
        with _startup_signals.held():  # a process started is recorded (and so ended) before a signal interrupts
            # The first upstreams start now and import their SDKs while the gateway imports its own (_prelaunch.py).
            prelaunch(first_launches(cfg), sys.stderr)
        _serve_gateway(cfg, transport=transport, profile=profile, watch=watch)
    finally:
        with _startup_signals.held():
            discard()


def _serve_gateway(cfg: GatewayConfig, *, transport: str, profile: str | None, watch: bool | None) -> None:
    from nexus_gateway.gateway import Gateway
    from nexus_gateway.reload import ConfigWatcher

    async def discard_unadopted(gateway: Gateway) -> None:
        await gateway.wait_ready()
        discard()

    async def main() -> None:
        async with Gateway(cfg) as gateway:
            gateway.start_soon(partial(discard_unadopted, gateway), name="prelaunch-discard")
            gateway.start_soon(partial(_heap.settle_after, gateway.wait_warm), name="settle-heap")
            if (cfg.nexus.watch if watch is None else watch) and cfg.path is not None:
                gateway.start_soon(ConfigWatcher(gateway, cfg.path, load).run, name="config-watcher")
            if transport == "stdio":
                from nexus_gateway.server.stdio import serve_stdio

                await serve_stdio(gateway, profile=profile)
            else:
                from nexus_gateway.server.http import serve_http

                await serve_http(gateway, host=cfg.nexus.host, port=cfg.nexus.port, profile=profile)

    run_async(main)


@tools_app.callback(invoke_without_command=True)
def tools(
    ctx: typer.Context,
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="Gateway config file.", envvar="NEXUS_CONFIG")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    log_level: Annotated[str, typer.Option(help="Log level (logs go to stderr).")] = "warning",
) -> None:
    """Connect to every upstream and print the catalog with each upstream's health and quarantined tools."""
    if ctx.invoked_subcommand is not None:
        return
    from nexus_gateway.gateway import Gateway

    if config is None:
        raise typer.BadParameter("is required", param_hint="--config")
    setup_logging(log_level)
    cfg = load(config)

    async def main() -> dict[str, Any]:
        async with Gateway(cfg) as gateway:
            await gateway.wait_ready()
            return {
                "mode": gateway.mode,
                "upstreams": [{**status.__dict__, "state": status.state.value} for status in gateway.pool.statuses()],
                "tools": [
                    {
                        "name": record.name,
                        "server": record.server,
                        "signature": record.signature,
                        "read_only": record.read_only,
                        "quarantined": record.quarantine is not None,
                    }
                    for record in gateway.catalog
                ],
                "quarantined": gateway.quarantined(),
                "trust": gateway.trust(),
            }

    report = run_async(main)
    if as_json:
        print(json.dumps(report, indent=2))
        return
    health = Table(title="Upstreams", title_justify="left")
    for column in ("server", "transport", "state", "tools", "restarts", "last error"):
        health.add_column(column)
    colors = {"healthy": "green", "unhealthy": "red"}
    for status in report["upstreams"]:
        state = f"[{colors.get(status['state'], 'yellow')}]{status['state']}[/]"
        health.add_row(
            status["name"],
            status["transport"],
            state,
            str(status["tools"]),
            str(status["restarts"]),
            escape(status["last_error"] or ""),
        )
    out.print(health)
    catalog = Table(title=f"{len(report['tools'])} tools (mode: {report['mode']})", title_justify="left")
    catalog.add_column("signature", overflow="fold")
    catalog.add_column("flags")
    for tool in report["tools"]:
        flags = ("read-only " if tool["read_only"] else "") + ("QUARANTINED (pinned)" if tool["quarantined"] else "")
        catalog.add_row(escape(tool["signature"]), flags.strip())
    out.print(catalog)
    if report["quarantined"]:
        held = Table(title=f"{len(report['quarantined'])} quarantined tools", title_justify="left")
        for column in ("tool", "why", "host sees"):
            held.add_column(column, overflow="fold")
        for item in report["quarantined"]:
            why = ", ".join(item["changes"]) + " changed" if item["changes"] else item["reason"]
            held.add_row(item["name"], why, "nothing (withheld)" if item["withheld"] else "the pinned definition")
        out.print(held)
        out.print(f"Review: nexus-gateway tools diff -c {config}; then: tools approve NAME --hash H -c ...")
    if report["trust"]["state"] != "ok":
        out.print(
            f"[red]Trust degraded[/] since {report['trust']['since']}: {escape(report['trust']['why'])}. Tools the "
            "pin store holds no approval for are withheld until a person approves them (tools approve).",
            highlight=False,
        )


@config_app.command("check")
def config_check(
    config: ConfigOption,
    connect: Annotated[
        bool, typer.Option(help="Also start every upstream, report its health and any tool names that collide.")
    ] = False,
) -> None:
    """Validate a config file as `serve` does and summarize it; exit status 2 when it is wrong."""
    from nexus_gateway.catalog.naming import prefix_of

    cfg = load(config)
    table = Table(title=str(cfg.path), title_justify="left")
    for column in ("server", "transport", "target", "names", "enabled"):
        table.add_column(column)
    for name, spec in cfg.servers.items():
        if isinstance(spec, StdioServer):
            transport, target = "stdio", " ".join([spec.command, *spec.args])
        else:
            transport, target = spec.transport, spec.url
        names = f"{prefix_of(name, spec.prefix)}*"
        table.add_row(name, transport, escape(target), escape(names), "no" if spec.disabled else "yes")
    out.print(table)
    out.print(
        f"mode: {cfg.nexus.mode}, call timeout: {cfg.nexus.call_timeout:g}s, HTTP: {cfg.nexus.host}:{cfg.nexus.port}"
    )
    if connect:
        setup_logging("error")
        from nexus_gateway.catalog import NameCollision
        from nexus_gateway.gateway import Gateway

        async def main() -> tuple[list[Any], list[NameCollision]]:
            async with Gateway(cfg) as gateway:
                await gateway.wait_ready()
                return gateway.pool.statuses(), gateway.catalog.collisions

        statuses, collisions = run_async(main)
        failed = [status for status in statuses if status.state.value != "healthy"]
        for status in statuses:
            mark = "[green]ok[/]" if status not in failed else f"[red]{escape(status.last_error or '')}[/]"
            out.print(f"  {status.name}: {status.tools} tools {mark}")
        if collisions:
            raise ConfigError("\n".join(f"{cfg.path}: {collision.message}" for collision in collisions))
        if failed:
            raise typer.Exit(1)
    out.print("[green]config is valid[/]")


def main() -> None:
    _startup_signals.catch()  # `python -m nexus_gateway` took them already, before the CLI's imports
    app()
