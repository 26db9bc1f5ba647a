"""`nexus-gateway auth login|status|logout`: sign in to remote upstreams that ask for OAuth.

`login` runs the sign-in here (it needs no running gateway): it opens the browser on the authorization URL and
waits for the redirect on the loopback redirect URI; with `--no-browser` (or with no display) it prints the URL
and also takes the redirect URL pasted back, for a browser on another machine. The sign-in goes to the store
(the OS keyring, or encrypted files in the state dir) where a running gateway finds it within a few seconds.
No command prints a token.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from nexus_gateway.cli._run import App, load, run_async, setup_logging
from nexus_gateway.config import GatewayConfig, RemoteServer, default_state_dir
from nexus_gateway.errors import ConfigError

auth_app = App(help="Sign in to remote upstreams that ask for OAuth; see who is signed in; sign out.")
out = Console()
err = Console(stderr=True)

ConfigOption = Annotated[
    Path,
    typer.Option(
        "--config", "-c", help="Gateway config (a Claude Desktop style mcpServers file).", envvar="NEXUS_CONFIG"
    ),
]
Name = Annotated[str, typer.Argument(help="The server's name in the config file.", show_default=False)]


def _remote(config: GatewayConfig, name: str) -> RemoteServer:
    spec = config.servers.get(name)
    if spec is None:
        known = ", ".join(sorted(config.servers)) or "none"
        raise ConfigError(f"{config.path}: no server named {name!r} (servers: {known})")
    if not isinstance(spec, RemoteServer):
        raise ConfigError(f"{config.path}: server {name!r} is a local (stdio) server; only remote servers sign in")
    if spec.oauth is not None and not spec.oauth.enabled:
        raise ConfigError(f'{config.path}: server {name!r} has "oauth": false; remove it to sign in')
    return spec


def _headless() -> bool:
    """No browser can be opened here: no display on Linux, or an SSH session."""
    if os.environ.get("SSH_CONNECTION") or os.environ.get("SSH_TTY"):
        return True
    return sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


@auth_app.command()
def login(
    config: ConfigOption,
    name: Name,
    no_browser: Annotated[
        bool,
        typer.Option(
            "--no-browser", help="Print the sign-in URL instead of opening a browser, and take the redirect pasted."
        ),
    ] = False,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the sign-in to complete.")] = 300.0,
    log_level: Annotated[str, typer.Option(help="Log level (logs go to stderr).")] = "warning",
) -> None:
    """Sign in to a remote server: open the authorization page, take the redirect, keep the tokens."""
    import anyio

    from nexus_gateway.upstreams.oauth import OAuthUpstreams, sign_in_command
    from nexus_gateway.upstreams.oauth.signin import Redirects, sign_in

    setup_logging(log_level)
    cfg = load(config)
    spec = _remote(cfg, name)
    oauth = OAuthUpstreams(cfg, default_state_dir(cfg))
    headless = no_browser or _headless()
    redirects = Redirects()

    async def show(url: str) -> None:
        if not headless:
            import webbrowser

            opened = await anyio.to_thread.run_sync(webbrowser.open, url)
            if opened:
                err.print(
                    f"Opened the browser to sign in to {escape(name)}. If it did not open, visit:", highlight=False
                )
                err.print(url, soft_wrap=True, highlight=False, markup=False)
                return
        err.print(f"To sign in to {escape(name)}, open this URL in a browser:", highlight=False)
        err.print(url, soft_wrap=True, highlight=False, markup=False)
        err.print(
            "Then, if the browser cannot reach this machine's 127.0.0.1, paste here the address it was sent to "
            "(it starts with http://127.0.0.1) and press Enter:",
            highlight=False,
        )
        _read_pasted(redirects, anyio.lowlevel.current_token())

    async def main() -> Any:
        return await sign_in(
            name,
            spec,
            oauth.store,
            show=show,
            redirects=redirects,
            lock_dir=oauth.lock_dir,
            sign_in_command=sign_in_command(name, cfg.path),
            timeout=timeout,
        )

    outcome = run_async(main)
    if not outcome.asked:
        out.print(f"{name}: the server did not ask for a sign-in (it answered without one); nothing was stored.")
        return
    lasts = f"; the access token lasts {_duration(outcome.expires_in)}" if outcome.expires_in is not None else ""
    renews = ", renewed automatically" if outcome.refreshable else ""
    out.print(f"[green]Signed in to {escape(name)}[/] ({outcome.tools} tools{lasts}{renews}).", highlight=False)
    out.print(f"The sign-in is kept in {escape(oauth.store.where)}.", highlight=False)


def _read_pasted(redirects: Any, token: Any) -> None:
    """Read redirect URLs from stdin in a daemon thread (a blocked read never holds the process open)."""
    import anyio.from_thread

    def read() -> None:
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                taken = anyio.from_thread.run_sync(redirects.deliver, line, token=token)
            except RuntimeError:  # the sign-in has ended
                return
            if not taken:
                err.print("That is not the redirect address (it has no code); paste the whole address.")

    threading.Thread(target=read, name="sign-in paste", daemon=True).start()


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 2 * 3600:
        return f"{seconds // 60}m"
    if seconds < 2 * 86400:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"


def status_rows(cfg: GatewayConfig) -> list[dict[str, Any]]:
    """Each remote upstream's sign-in, from the store only (no network): never a token."""
    from nexus_gateway.upstreams.oauth import OAuthUpstreams
    from nexus_gateway.upstreams.oauth.provider import wants_oauth

    oauth = OAuthUpstreams(cfg, default_state_dir(cfg))
    rows: list[dict[str, Any]] = []
    now = time.time()
    for name, spec in cfg.servers.items():
        if not isinstance(spec, RemoteServer):
            continue
        if not wants_oauth(spec):
            rows.append(
                {"server": name, "state": "off", "detail": "sign-in turned off, or a static Authorization header"}
            )
            continue
        record = oauth.store.load(name, spec.url)
        tokens = record.tokens if record is not None else None
        if record is not None and tokens:
            refreshable = bool(tokens.get("refresh_token"))
            if record.expires_at is None:
                detail = "the access token does not expire"
            elif record.expires_at > now:
                detail = f"the access token expires in {_duration(record.expires_at - now)}"
            else:
                detail = "the access token has expired"
            detail += "; renewed automatically" if refreshable else ""
            state = "signed in" if refreshable or record.expires_at is None or record.expires_at > now else "expired"
            if state == "expired":
                detail += f"; sign in again: nexus-gateway auth login {name}"
            rows.append({"server": name, "state": state, "detail": detail, "scope": tokens.get("scope")})
        elif record is not None and record.needs:
            rows.append({"server": name, "state": "needs authorization", "detail": record.needs})
        else:
            rows.append({"server": name, "state": "not signed in", "detail": "no sign-in kept (none asked for yet)"})
    return rows


@auth_app.command()
def status(
    config: ConfigOption,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Each remote server's sign-in: signed in (and when its token expires), needs authorization, or none."""
    cfg = load(config)
    rows = status_rows(cfg)
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    if not rows:
        out.print("No remote servers in this config.")
        return
    colors = {"signed in": "green", "needs authorization": "yellow", "expired": "red"}
    table = Table(title="Sign-ins", title_justify="left")
    for column in ("server", "state", "detail"):
        table.add_column(column, overflow="fold")
    for row in rows:
        color = colors.get(row["state"], "default")
        table.add_row(row["server"], f"[{color}]{row['state']}[/]", escape(row["detail"]))
    out.print(table)


@auth_app.command()
def logout(config: ConfigOption, name: Name) -> None:
    """Forget the sign-in to a remote server (its tokens and the client registration)."""
    from nexus_gateway.upstreams.oauth import OAuthUpstreams

    cfg = load(config)
    spec = _remote(cfg, name)
    oauth = OAuthUpstreams(cfg, default_state_dir(cfg))
    if oauth.store.delete(name, spec.url):
        out.print(f"{name}: signed out (a running gateway asks for a sign-in at its next connection).")
    else:
        out.print(f"{name}: no sign-in was kept.")
