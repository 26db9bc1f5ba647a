"""`nexus-gateway import-claude`: move a Claude Desktop config's servers behind the gateway."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from nexus_gateway.config import parse_config
from nexus_gateway.errors import ConfigError

GATEWAY_ENTRY = "nexus-gateway"
out = Console()
err = Console(stderr=True)


def claude_desktop_config_path() -> Path:
    """Where Claude Desktop keeps its config on this platform."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA", Path.home())) / "Claude" / "claude_desktop_config.json"
    return Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config")) / "Claude" / "claude_desktop_config.json"


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object")
    return data


def gateway_entry(gateway_config: Path, *, connect: bool = False) -> dict[str, Any]:
    """The one `mcpServers` entry that replaces all the imported ones: `serve` (a gateway of the host's own)
    or, with `connect`, the shim that attaches to the one shared daemon."""
    command = ["connect" if connect else "serve", "--config", str(gateway_config)]
    executable = shutil.which("nexus-gateway")
    if executable:
        return {"command": executable, "args": command}
    return {"command": sys.executable, "args": ["-m", "nexus_gateway", *command]}


def plan_import(
    claude: dict[str, Any], existing: dict[str, Any] | None, gateway_config: Path, *, connect: bool = False
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return (new gateway config, new Claude config). Pure: nothing is written."""
    servers = {name: entry for name, entry in (claude.get("mcpServers") or {}).items() if name != GATEWAY_ENTRY}
    merged = dict(existing or {})
    merged["mcpServers"] = {**(merged.get("mcpServers") or {}), **servers}
    merged.setdefault("nexus", {"mode": "auto"})
    new_claude = dict(claude)
    new_claude["mcpServers"] = {GATEWAY_ENTRY: gateway_entry(gateway_config, connect=connect)}
    return merged, new_claude


def import_claude(
    output: Annotated[Path, typer.Option("--output", "-o", help="Gateway config to create or merge into.")] = Path(
        "nexus-gateway.json"
    ),
    claude_config: Annotated[
        Path | None, typer.Option("--claude-config", help="Claude Desktop config (default: the platform's path).")
    ] = None,
    write: Annotated[
        bool, typer.Option("--write", help="Also rewrite the Claude config to the single gateway entry (backed up).")
    ] = False,
    connect: Annotated[
        bool,
        typer.Option(
            "--connect", help="The entry runs `connect` (share one daemon with your other hosts) instead of `serve`."
        ),
    ] = False,
) -> None:
    """Move the servers of a Claude Desktop config into a gateway config; print (or write) the entry that
    replaces them."""
    source = (claude_config or claude_desktop_config_path()).expanduser()
    target = output.expanduser().resolve()
    claude = _read_json(source)
    existing = _read_json(target) if target.exists() else None
    gateway_config, new_claude = plan_import(claude, existing, target, connect=connect)
    parse_config(gateway_config, label=str(target), environ={**os.environ})
    if existing is not None:
        shutil.copy2(target, target.with_name(f"{target.name}.bak-{time.strftime('%Y%m%d-%H%M%S')}"))
    target.write_text(json.dumps(gateway_config, indent=2) + "\n", encoding="utf-8")
    imported = sorted(gateway_config["mcpServers"])
    out.print(f"wrote {target} with {len(imported)} servers: {', '.join(imported)}", highlight=False)
    if write:
        backup = source.with_name(f"{source.name}.bak-{time.strftime('%Y%m%d-%H%M%S')}")
        shutil.copy2(source, backup)
        source.write_text(json.dumps(new_claude, indent=2) + "\n", encoding="utf-8")
        out.print(f"rewrote {source} (backup: {backup})", highlight=False)
    else:
        out.print("Replace the mcpServers of your Claude Desktop config with:", highlight=False)
        print(json.dumps({"mcpServers": new_claude["mcpServers"]}, indent=2))
