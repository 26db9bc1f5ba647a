"""`nexus-gateway bench ...`: benchmarks that write JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

app = typer.Typer(help="Benchmarks (JSON output; compare ratios measured in the same run).", no_args_is_help=True)
out = Console()


@app.command()
def proxy(
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the results here.")] = None,
    calls: Annotated[int, typer.Option(help="Measured calls per path.")] = 500,
    warmup: Annotated[int, typer.Option(help="Unmeasured calls per path first.")] = 50,
) -> None:
    """p50/p99 latency of tools/call through the gateway against the same upstream called directly (stdio)."""
    from nexus_gateway.bench.proxy import run

    result = run(calls, warmup)
    text = json.dumps(result, indent=2)
    if json_out:
        json_out.write_text(text + "\n")
    out.print_json(text)
