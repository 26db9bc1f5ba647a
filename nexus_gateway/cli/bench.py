"""`nexus-gateway bench ...`: benchmarks that write JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.console import Console
from rich.markup import escape

from nexus_gateway.cli import engine as engine_cli
from nexus_gateway.cli._run import App

app = App(help="Benchmarks (JSON output; compare ratios measured in the same run).", no_args_is_help=True)
out = Console()
err = Console(stderr=True)
app.command("fidelity")(engine_cli.fidelity)
app.command("ttft")(engine_cli.ttft)
app.command("memory")(engine_cli.memory)


@app.command()
def proxy(
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the results here.")] = None,
    plot_out: Annotated[Path | None, typer.Option("--plot", help="Write a PNG plot here (needs matplotlib).")] = None,
    peer: Annotated[
        list[str],
        typer.Option(
            help="A peer to measure too: mcp-proxy, fastmcp, supergateway, floor (a relay that only copies lines) "
            "or NAME=stdio|http:COMMAND."
        ),
    ] = [],  # noqa: B006
    transport: Annotated[
        str, typer.Option(help="stdio, http or both (comma-separated): how clients reach a proxy.")
    ] = ("stdio"),
    rounds: Annotated[int, typer.Option(min=1, help="Interleaved rounds (round-robin over the proxies).")] = 10,
    calls: Annotated[int, typer.Option(min=1, help="Measured calls per proxy per round.")] = 100,
    warmup: Annotated[int, typer.Option(min=0, help="Unmeasured calls per proxy first.")] = 20,
    concurrency: Annotated[str, typer.Option(help="Concurrent clients for calls/s, comma-separated.")] = "1,4,16",
    throughput_calls: Annotated[
        int, typer.Option(min=1, help="Calls per proxy at each concurrency, spread over the rounds.")
    ] = 320,
    cold_starts: Annotated[int, typer.Option(min=1, help="Cold starts per proxy (the median is reported).")] = 3,
    peer_path: Annotated[
        list[str], typer.Option(help="A directory to look for peers (and node) in, besides PATH.")
    ] = [],  # noqa: B006
    interleave: Annotated[
        str, typer.Option(help="rounds: blocks of --calls per proxy each round; calls: one call per proxy in turn.")
    ] = "rounds",
) -> None:
    """Latency, CPU per call, calls/s, cold start and RSS of nexus-gateway (passthrough) and its peers, each in
    front of the same echo upstream, against that upstream called directly over stdio."""
    from nexus_gateway.bench.peers import TRANSPORTS, Transport
    from nexus_gateway.bench.proxy import markdown_table, run

    chosen: list[Transport] = []
    for item in (part.strip() for part in transport.split(",") if part.strip()):
        if item not in TRANSPORTS:
            raise typer.BadParameter("stdio, http or stdio,http", param_hint="--transport")
        chosen.append("stdio" if item == "stdio" else "http")
    try:
        levels = [int(item) for item in concurrency.split(",") if item.strip()]
    except ValueError:
        raise typer.BadParameter("a comma-separated list of numbers, e.g. 1,4,16", param_hint="--concurrency") from None
    if interleave not in ("rounds", "calls"):
        raise typer.BadParameter("rounds or calls", param_hint="--interleave")
    result = run(
        transports=chosen or ["stdio"],
        peers=peer,
        rounds=rounds,
        calls=calls,
        warmup=warmup,
        concurrency=levels,
        throughput_calls=throughput_calls,
        cold_starts=cold_starts,
        extra_path=peer_path,
        interleave=interleave,
    )
    text = json.dumps(result, indent=2)
    if json_out:
        json_out.write_text(text + "\n")
    if plot_out:
        from nexus_gateway.bench._plots import proxy_plot
        from nexus_gateway.cli._run import fail
        from nexus_gateway.errors import ConfigError

        try:
            proxy_plot(result, plot_out)
        except ConfigError as exc:
            fail(exc)
    out.print_json(text)
    print(markdown_table(result))
    for note in result["notes"]:
        out.print(f"[yellow]note:[/] {escape(note)}", highlight=False)


@app.command()
def cluster(
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the results here.")] = None,
    calls: Annotated[int, typer.Option(min=1, help="Measured calls per path and era (latency).")] = 1000,
    warmup: Annotated[int, typer.Option(min=0, help="Unmeasured calls per path first.")] = 50,
    clients: Annotated[int, typer.Option(min=1, help="Concurrent modern-era clients for calls/s.")] = 8,
    throughput_calls: Annotated[int, typer.Option(min=1, help="Calls per replica count for calls/s.")] = 1200,
    rounds: Annotated[int, typer.Option(min=1, help="Rounds over the replica counts (calls/s).")] = 3,
    redis: Annotated[
        bool | None, typer.Option("--redis/--no-redis", help="Shared store in Redis (default: when installed).")
    ] = None,
) -> None:
    """Gateway replicas behind HAProxy (Redis as their store) against one gateway, started on loopback: added p50,
    Redis round trips per tools/call, calls/s over 1, 2 and 3 replicas. Needs haproxy (and redis-server)."""
    from nexus_gateway.bench.cluster import run_cluster_bench

    result = run_cluster_bench(
        calls=calls,
        warmup=warmup,
        clients=clients,
        throughput_calls=throughput_calls,
        rounds=rounds,
        redis=redis,
        progress=lambda line: err.print(line, highlight=False),
    )
    text = json.dumps(result, indent=2)
    if json_out:
        json_out.write_text(text + "\n")
    out.print_json(text)
    for note in result["notes"]:
        out.print(f"[yellow]note:[/] {escape(note)}", highlight=False)


@app.command("big-result")
def big_result(
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the results here.")] = None,
    megabytes: Annotated[float, typer.Option(min=0.001, help="Size of the tool result.")] = 40.0,
    repeats: Annotated[int, typer.Option(min=1, help="Calls per path.")] = 3,
) -> None:
    """Seconds and MB/s to receive one large tool result through the gateway against the upstream directly (stdio)."""
    from nexus_gateway.bench.big_result import run

    result = run(megabytes, repeats)
    text = json.dumps(result, indent=2)
    if json_out:
        json_out.write_text(text + "\n")
    out.print_json(text)


@app.command()
def load(
    clients: Annotated[str, typer.Option(help="Client counts, comma-separated; one level each.")] = "10,50,100",
    calls: Annotated[int, typer.Option(min=1, help="Calls each client sends in turn.")] = 20,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the results here.")] = None,
    flood: Annotated[bool, typer.Option("--flood", help="Flood initializes (never DELETEd) meanwhile.")] = False,
    era: Annotated[str, typer.Option(help="legacy (initialize handshake) | modern (2026-07-28).")] = "legacy",
    max_sessions: Annotated[int, typer.Option(min=1, help="The gateway's max_sessions.")] = 256,
) -> None:
    """calls/s, p50/p99, errors, gateway RSS and fds of concurrent streamable-HTTP clients (echo upstream)."""
    from nexus_gateway.bench.load import Era, run

    try:
        counts = [int(item) for item in clients.split(",") if item.strip()]
    except ValueError:
        raise typer.BadParameter("a comma-separated list of numbers, e.g. 10,50,100", param_hint="--clients") from None
    if era not in ("legacy", "modern"):
        raise typer.BadParameter("must be legacy or modern", param_hint="--era")
    mode: Era = "legacy" if era == "legacy" else "modern"
    result = run(counts, calls, with_flood=flood, era=mode, max_sessions=max_sessions)
    text = json.dumps(result, indent=2)
    if json_out:
        json_out.write_text(text + "\n")
    out.print_json(text)


@app.command()
def startup(
    config: Annotated[Path, typer.Argument(help="Gateway config whose servers are started.")],
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the results here.")] = None,
    modes: Annotated[str, typer.Option(help="Gateway modes to start, comma-separated.")] = "passthrough,routed",
    rounds: Annotated[int, typer.Option(min=1, help="Interleaved rounds (direct and each mode once per round).")] = 2,
    timeout: Annotated[float, typer.Option(min=1, help="Seconds one start may take in all.")] = 240.0,
    setting: Annotated[
        list[str], typer.Option("--set", help="NEXUS_NAME=VALUE for the gateway runs (e.g. NEXUS_START_TIMEOUT=60).")
    ] = [],  # noqa: B006
    state: Annotated[
        str,
        typer.Option(
            help="kept: one state dir per mode across rounds (a restarted gateway: from round 2 it starts the "
            "slowest servers first); fresh: a new one per run (every run a first start)."
        ),
    ] = "kept",
) -> None:
    """Time to all healthy of the gateway (per mode) against the same servers started directly and all at once
    with the official client; the difference per round is the gateway's constant."""
    from nexus_gateway.bench.startup import run

    chosen = [mode.strip() for mode in modes.split(",") if mode.strip()]
    if not chosen or any(mode not in ("passthrough", "routed") for mode in chosen):
        raise typer.BadParameter("passthrough, routed or passthrough,routed", param_hint="--modes")
    if any("=" not in item for item in setting):
        raise typer.BadParameter("NAME=VALUE", param_hint="--set")
    env = dict(item.split("=", 1) for item in setting)
    if state not in ("kept", "fresh"):
        raise typer.BadParameter("kept or fresh", param_hint="--state")

    def report(result: dict[str, Any]) -> None:
        seconds = result.get("seconds_to_all_answered", result.get("seconds_to_all_healthy"))
        extra = ""
        if result["kind"] != "direct":
            extra = (
                f", first tools/list {result['seconds_to_first_tools_list']} s, index ready "
                f"{result['seconds_to_index_ready']} s, restarts {sum(map(len, result['restarts'].values()))}"
            )
        done = result.get("answered", result.get("healthy"))
        err.print(
            f"round {result['round']} {result['kind']}: {done}/{result['of']} in {seconds} s{extra}", soft_wrap=True
        )

    kept: Literal["kept", "fresh"] = "kept" if state == "kept" else "fresh"
    result = run(
        config, modes=chosen, rounds=rounds, timeout=timeout, env=env, progress=report, json_out=json_out, state=kept
    )
    out.print_json(json.dumps(result["summary"]))


@app.command("run")
def run_(
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the results here.")] = None,
    clients: Annotated[int, typer.Option(min=1, help="Concurrent clients, each its own session.")] = 8,
    requests_per_client: Annotated[int, typer.Option(min=1, help="run requests each client sends in turn.")] = 3,
    log_level: Annotated[str, typer.Option(help="Log level (progress goes to stderr).")] = "info",
) -> None:
    """Throughput and correctness of `run` with concurrent clients over streamable HTTP, against one client."""
    from nexus_gateway.bench.run import run
    from nexus_gateway.cli._run import setup_logging

    setup_logging(log_level)
    result = run(clients, requests_per_client)
    text = json.dumps(result, indent=2)
    if json_out:
        json_out.write_text(text + "\n")
    out.print_json(text)


@app.command("run-catalog")
def run_catalog(
    tools: Annotated[
        Path, typer.Option(help="tools.json of the catalog (each tool's `server` becomes a stub upstream).")
    ],
    cases: Annotated[Path, typer.Option(help="cases.jsonl over that catalog (DESIGN.md's format).")],
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the results here.")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N cases.")] = None,
    state_dir: Annotated[
        Path | None,
        typer.Option(
            help="The gateway's state (index, compiled blocks): kept between runs (default: a folder per catalog)."
        ),
    ] = None,
    setting: Annotated[
        list[str],
        typer.Option("--set", help='A nexus setting for this run, NAME=JSON (e.g. rerank_k=3, run_mode="signature").'),
    ] = [],  # noqa: B006
    settle: Annotated[
        bool,
        typer.Option(
            help="Before each case, let the blocks compiled in the background finish (a host's turn between calls "
            "gives that time; not counted): each case meets the steady state."
        ),
    ] = True,
    log_level: Annotated[str, typer.Option(help="Log level (stderr).")] = "warning",
) -> None:
    """`run` end to end on a real catalog served by stub upstreams: what it did for each case (called, proposed,
    ambiguous, invalid), right / wrong tool called, latency p50/p95 and its stages (route, re-rank, fill, call)."""
    import hashlib

    import anyio

    from nexus_gateway.bench.run_catalog import Outcome
    from nexus_gateway.bench.run_catalog import run_catalog as measure
    from nexus_gateway.cli._run import setup_logging
    from nexus_gateway.evals.dataset import load_cases

    setup_logging(log_level)
    nexus: dict[str, Any] = {}
    for item in setting:
        name, sep, value = item.partition("=")
        if not sep:
            raise typer.BadParameter("NAME=JSON", param_hint="--set")
        try:
            nexus[name.strip()] = json.loads(value)
        except ValueError:
            nexus[name.strip()] = value
    chosen = load_cases(cases, limit)
    if state_dir is None:
        digest = hashlib.sha256(tools.read_bytes()).hexdigest()[:12]
        state_dir = default_state_dir_root() / f"bench-run-catalog-{digest}"
    colors = {"right": "green", "wrong_called": "bold red", "missed": "yellow", "invalid": "red"}

    def report(number: int, total: int, outcome: Outcome) -> None:
        color = colors.get(outcome.verdict, "magenta")
        arguments = json.dumps(outcome.arguments, ensure_ascii=False) if outcome.arguments is not None else ""
        stages = " ".join(f"{k} {v:.0f}" for k, v in outcome.timings_ms.items() if v >= 1)
        shown = f" ({', '.join(outcome.candidates[:3])})" if outcome.status in ("ambiguous", "proposed") else ""
        err.print(
            f"[{number}/{total}] [{color}]{outcome.verdict}[/] {escape(outcome.case.id)} {outcome.status} "
            f"{escape(str(outcome.tool or '-'))} {escape(arguments[:120])}{escape(shown)} "
            f"[dim]{outcome.seconds * 1000:.0f} ms ({outcome.cpu_seconds * 1000:.0f} ms CPU): {stages}[/]",
            soft_wrap=True,
            highlight=False,
        )

    result = anyio.run(lambda: measure(tools, chosen, state_dir=state_dir, nexus=nexus, progress=report, settle=settle))
    result["command"] = {"tools": str(tools), "cases": str(cases), "limit": limit, "set": setting, "settle": settle}
    text = json.dumps(result, indent=2, ensure_ascii=False)
    if json_out:
        json_out.write_text(text + "\n")
    out.print_json(json.dumps(result["summary"]))


def default_state_dir_root() -> Path:
    """Where `bench run-catalog` keeps a catalog's state between runs (the index takes minutes to build)."""
    return Path.home() / ".cache" / "nexus-gateway"


@app.command()
def routing(
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the results here.")] = None,
    plot_out: Annotated[Path | None, typer.Option("--plot", help="Write a PNG plot here.")] = None,
    tools: Annotated[list[Path], typer.Option(help="tools.json files whose texts fill the index.")] = [],  # noqa: B006
    embedder: Annotated[str, typer.Option(help="default | hashing | gguf:PATH")] = "default",
    max_tools: Annotated[int, typer.Option(help="Largest catalog size.")] = 10000,
) -> None:
    """Scan latency against catalog size (10 to 10,000 tools), query embedding latency, build time, memory."""
    from nexus_gateway.bench.routing import SIZES, plot, run_routing_bench
    from nexus_gateway.evals.dataset import load_tools
    from nexus_gateway.routing.embedders import make_embedder
    from nexus_gateway.routing.retriever import index_text

    texts = [
        index_text(t["name"], t.get("description") or "", t.get("inputSchema"), t.get("server", ""))
        for path in tools
        for t in load_tools(path)
    ]
    sizes = [size for size in SIZES if size <= max_tools]
    result = run_routing_bench(make_embedder(embedder), texts, sizes)
    text = json.dumps(result, indent=2)
    if json_out:
        json_out.write_text(text + "\n")
    if plot_out:
        plot(result, plot_out)
    out.print_json(text)


@app.command()
def context(
    tools: Annotated[Path, typer.Option(help="tools.json (wire form, names namespaced) to measure.")],
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the results here.")] = None,
    model: Annotated[str | None, typer.Option(help="GGUF whose tokenizer counts (default: the bundled model).")] = None,
) -> None:
    """Tokens of tools/list in routed against passthrough mode, and compressed-signature lengths."""
    from nexus_gateway.bench.context import context_cost
    from nexus_gateway.engine.llama import LlamaModel
    from nexus_gateway.engine.model import resolve_model
    from nexus_gateway.evals.dataset import load_tools

    with LlamaModel(resolve_model(model).path) as llama:
        result = context_cost(load_tools(tools), llama.tokenize)
    result["tokenizer"] = Path(llama.path).name
    text = json.dumps(result, indent=2)
    if json_out:
        json_out.write_text(text + "\n")
    out.print_json(text)
