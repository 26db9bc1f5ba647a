"""`nexus-gateway eval routing`, `eval fields`, `eval arguments` and `calibrate routing`."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from nexus_gateway.cli._run import App
from nexus_gateway.errors import NexusError

if TYPE_CHECKING:
    from nexus_gateway.evals.dataset import Case

eval_app = App(help="Evaluate on labelled sets (tools.json + cases.jsonl).", no_args_is_help=True)
calibrate_app = App(help="Calibrate thresholds on labelled sets.", no_args_is_help=True)
out = Console()
err = Console(stderr=True)

ToolsOption = Annotated[Path, typer.Option("--tools", help="tools.json: a JSON array of MCP Tool objects.")]
CasesOption = Annotated[Path, typer.Option("--cases", help="cases.jsonl: {id, query, tool, arguments?} a line.")]
EmbedderOption = Annotated[str, typer.Option(help="default | hashing | gguf:PATH | bm25")]
FusionOption = Annotated[str, typer.Option(help="linear | rrf | dense | lexical")]
LimitOption = Annotated[int | None, typer.Option(help="Evaluate a seeded random sample of this many cases.")]


def _load(
    tools: Path, cases: Path, distractors: list[Path], limit: int | None, seed: int, offset: int = 0
) -> tuple[list[dict[str, Any]], list[Case]]:
    """The tool pool and the cases: with `limit`, a seeded sample of that many; with `offset`, taken from the
    cases the sample of `offset` leaves out (a tuning split disjoint from the standard `--limit 100`)."""
    from nexus_gateway.evals.dataset import load_cases, load_tools

    pool = load_tools(tools)
    seen = {tool["name"] for tool in pool}
    for path in distractors:
        for tool in load_tools(path):
            if tool["name"] not in seen:
                seen.add(tool["name"])
                pool.append(tool)
    loaded = load_cases(cases)
    if offset:  # leave out the cases `--limit offset` would take: a split disjoint from them
        taken = {id(case) for case in random.Random(seed).sample(loaded, min(offset, len(loaded)))}
        loaded = [case for case in loaded if id(case) not in taken]
    if limit is not None and limit < len(loaded):
        loaded = random.Random(seed).sample(loaded, limit)  # cases files are often grouped by tool
    return pool, loaded


EmbedCacheOption = Annotated[
    Path | None,
    typer.Option("--embed-cache", help="Keep the vectors of embedded texts in this .npz and reuse them (speed only)."),
]


def _embedder(spec: str, cache: Path | None = None) -> Any:
    from nexus_gateway.routing.embedders import make_embedder

    embedder = make_embedder("hashing" if spec == "bm25" else spec)
    if cache is None:
        return embedder
    from nexus_gateway.evals.embed_cache import CachedEmbedder

    return CachedEmbedder(embedder, cache)


def _run(tools: Path, cases: Path, distractors: list[Path], sizes: list[int], **kw: Any) -> dict[str, Any]:
    from nexus_gateway.evals.routing import evaluate_routing, restrict_to_examples

    pool, loaded = _load(tools, cases, distractors, kw.pop("limit"), kw["seed"])
    examples_only, use_examples = kw.pop("examples_only", False), kw.pop("use_examples", True)
    if examples_only and kw.get("examples") is not None:
        pool, loaded = restrict_to_examples(pool, loaded, kw["examples"])
    if not use_examples:
        kw["examples"] = None
    embedder = kw.pop("embedder")
    from rich.progress import Progress

    with Progress(console=err, transient=True) as progress:
        task = progress.add_task(f"routing {len(loaded)} cases among {len(pool)} tools", total=len(sizes))

        def advance(label: str, done: int, total: int) -> None:
            progress.update(task, completed=done, description=f"routing {len(loaded)} cases, {label}")

        return evaluate_routing(pool, loaded, sizes, embedder, progress=advance, **kw)


def _add_reranking(
    report: dict[str, Any],
    embedder: Any,
    sets: tuple[Path, Path, list[Path]],
    sizes: list[int],
    seed: int,
    limit: int | None,
    model: str | None,
    k: int,
    weight: float,
    details: Path | None,
) -> None:
    """`eval routing --rerank`: the local model's choice below the gate, added to each size's row."""
    import anyio

    from nexus_gateway.engine.settings import engine_settings
    from nexus_gateway.evals.reranking import evaluate_reranking

    pool, loaded = _load(*sets, limit, seed)
    settings = engine_settings(None, model=model)
    from rich.progress import Progress

    with Progress(console=err, transient=True) as progress:
        task = progress.add_task(f"re-ranking below the gate (top {k})", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        reranked, lines = anyio.run(
            lambda: evaluate_reranking(
                pool,
                loaded,
                sizes,
                embedder,
                settings,
                seed=seed,
                method=report["fusion"],
                tau=report["tau"],
                k=k,
                weight=weight,
                progress=advance,
            )
        )
    for size, row in reranked.items():
        report["sizes"][size]["rerank"] = row
    if details:
        details.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise typer.BadParameter("a comma-separated list of integers, e.g. 10,50,250", param_hint="--sizes") from None
    if not sizes or min(sizes) < 2:
        raise typer.BadParameter("sizes must be at least 2", param_hint="--sizes")
    return sizes


def _default_tau(embedder_name: str, fusion: str) -> float:
    from nexus_gateway.routing.gate import Calibration
    from nexus_gateway.routing.hybrid import DEFAULT_CALIBRATION

    if not DEFAULT_CALIBRATION.exists():
        return float("inf")
    calibration = Calibration.load(DEFAULT_CALIBRATION)
    same = calibration.embedder == embedder_name and calibration.fusion == fusion
    return calibration.tau if same else float("inf")


@eval_app.command("routing")
def eval_routing(
    tools: ToolsOption,
    cases: CasesOption,
    distractors: Annotated[list[Path], typer.Option(help="More tools.json files to draw distractors from.")] = [],  # noqa: B006
    sizes: Annotated[str, typer.Option(help="Candidate-set sizes N.")] = "10,50,100,250,1000",
    seed: Annotated[int, typer.Option(help="Seed for distractors and sampling.")] = 0,
    limit: LimitOption = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the report here.")] = None,
    embedder: EmbedderOption = "default",
    fusion: FusionOption = "linear",
    tau: Annotated[float | None, typer.Option(help="Margin gate threshold (default: the shipped calibration).")] = None,
    rerank: Annotated[
        bool, typer.Option("--rerank", help="Below the gate, re-rank the top k with the local model's evidence.")
    ] = False,
    rerank_k: Annotated[int, typer.Option(min=1, max=20, help="Candidates the local model scores.")] = 5,
    rerank_weight: Annotated[
        float | None, typer.Option(help="With --rerank: the model's weight against retrieval (default: shipped).")
    ] = None,
    model: Annotated[str | None, typer.Option(help="With --rerank: a packaged model's name or a GGUF path.")] = None,
    details: Annotated[
        Path | None,
        typer.Option(
            "--details",
            help="Every case here, one JSON line each: where its right tool ranked and the best 5 at each N "
            "(with --rerank: every re-ranked case, the model's scores).",
        ),
    ] = None,
    embed_cache: EmbedCacheOption = None,
    examples: Annotated[
        Path | None,
        typer.Option(help="Usage examples (an `index examples` file), indexed beside the tools as the gateway does."),
    ] = None,
    examples_only: Annotated[
        bool,
        typer.Option(help="With --examples: only the tools it covers and the cases whose gold tool it covers."),
    ] = False,
    without_examples: Annotated[
        bool, typer.Option(help="With --examples-only: the same tools and cases, their examples not indexed.")
    ] = False,
) -> None:
    """Top-1 and recall@5 of routing among N tools (the gold one and N-1 seeded distractors), and the gate;
    with --rerank, top-1 when the local model chooses among the top k below the gate, and its time."""
    method = "lexical" if embedder == "bm25" else fusion
    usage = None
    if examples is not None:
        from nexus_gateway.generation.example_cache import load_examples

        if not examples.is_file():
            raise NexusError(f"{examples}: no such examples file (write one with `nexus-gateway index examples`)")
        usage = load_examples(examples)
    embedded = _embedder(embedder, embed_cache)
    threshold = tau if tau is not None else _default_tau(embedded.name, method)
    lines: list[dict[str, Any]] | None = [] if details is not None and not rerank else None
    report = _run(
        tools,
        cases,
        distractors,
        _sizes(sizes),
        seed=seed,
        limit=limit,
        embedder=embedded,
        method=method,
        tau=threshold,
        examples=usage,
        examples_only=examples_only,
        use_examples=not without_examples,
        details=lines,
    )
    if lines is not None and details is not None:
        details.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    if embed_cache is not None:
        embedded.save()
    if rerank:
        sets = (tools, cases, distractors)
        from nexus_gateway.generation.rerank import WEIGHT

        weight = WEIGHT if rerank_weight is None else rerank_weight
        _add_reranking(report, embedded, sets, _sizes(sizes), seed, limit, model, rerank_k, weight, details)
    table = Table(title=f"routing: {report['n_cases']} cases, {report['embedder']}, {method}", title_justify="left")
    columns = ["N", "top-1", "recall@5", "auto coverage", "auto precision", "scan p50 (us)"]
    if rerank:
        columns += ["top-1 re-ranked", "re-ranked", "re-rank p50 (ms)"]
    for column in columns:
        table.add_column(column, justify="right")
    for size, row in report["sizes"].items():
        cells = [
            size,
            f"{row['top1']:.1%}",
            f"{row['recall@5']:.1%}",
            f"{row['auto_coverage']:.1%}",
            f"{row['auto_precision']:.1%}",
            f"{report['scan_us_p50'][size]:.1f}",
        ]
        if rerank:
            again = row["rerank"]
            cells += [f"{again['top1_reranked']:.1%}", str(again["reranked"]), str(again["rerank_ms_p50"])]
        table.add_row(*cells)
    out.print(table)
    out.print(f"query embedding p50: {report['embed_ms_p50']} ms; gate tau: {report['tau']}")
    if json_out:
        json_out.write_text(json.dumps(report, indent=2) + "\n")


def _tuning_set(spec: str, seed: int) -> Any:
    """`NAME=TOOLS[+DISTRACTORS...],CASES,SIZE[,LIMIT]` (SIZE `all`: the whole pool) as a `TuningSet`."""
    from nexus_gateway.evals.fields import TuningSet

    name, _, rest = spec.partition("=")
    parts = rest.split(",")
    if not name or len(parts) not in (3, 4):
        raise typer.BadParameter(f"{spec!r}: expected NAME=TOOLS[+DISTRACTORS],CASES,SIZE[,LIMIT]", param_hint="--set")
    try:
        size = 10**9 if parts[2] == "all" else int(parts[2])
        limit = int(parts[3]) if len(parts) == 4 else None
    except ValueError:
        message = f"{spec!r}: SIZE and LIMIT are integers (SIZE may be 'all')"
        raise typer.BadParameter(message, param_hint="--set") from None
    tools, *distractors = (Path(path) for path in parts[0].split("+"))
    pool, loaded = _load(tools, Path(parts[1]), distractors, limit, seed)
    return TuningSet(name, pool, loaded, min(size, len(pool)))


@eval_app.command("fields")
def eval_fields(
    sets: Annotated[
        list[str],
        typer.Option(
            "--set",
            help="A development set NAME=TOOLS[+DISTRACTORS...],CASES,SIZE[,LIMIT] (SIZE 'all': the whole pool; "
            "DISTRACTORS: more tools.json files to draw from); repeatable.",
        ),
    ],
    seed: Annotated[int, typer.Option(help="Seed for distractors and sampling.")] = 0,
    embedder: EmbedderOption = "default",
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the whole grid here.")] = None,
    show: Annotated[int, typer.Option(min=1, help="Rows of the grid to print.")] = 10,
    embed_cache: EmbedCacheOption = None,
) -> None:
    """Grid search of field weights (BM25F weights of name, description, parameters, server; the fields embedded;
    the fusion weight) on development sets, by mean top-1 over the sets. Never pass a held-out set."""
    from nexus_gateway.evals.fields import search_fields

    chosen = [_tuning_set(spec, seed) for spec in sets]
    with err.status("field grid") as status:
        report = search_fields(chosen, _embedder(embedder, embed_cache), seed=seed, progress=status.update)
    table = Table(title=f"field weights: {len(report['grid'])} points, {report['embedder']}", title_justify="left")
    for column in ("lexical n/d/p/s", "dense n/d/p/s", "fusion", "mean top-1", "mean recall@5", "per set top-1"):
        table.add_column(column)
    rows = report["grid"][:show] + ([report["current"]] if report["current"] else [])
    for row in rows:
        weights = [row["lexical"], row["dense"]]
        table.add_row(
            *("/".join(f"{value:g}" for value in w.values()) for w in weights),
            f"{row['fusion']:g}",
            f"{row['mean_top1']:.1%}",
            f"{row['mean_recall@5']:.1%}",
            " ".join(f"{name} {cell['top1']:.1%}" for name, cell in row["sets"].items()),
        )
    out.print(table)
    out.print("last row: the current defaults")
    if json_out:
        json_out.write_text(json.dumps(report, indent=2) + "\n")


@calibrate_app.command("routing")
def calibrate_routing(
    tools: ToolsOption,
    cases: CasesOption,
    target_precision: Annotated[float, typer.Option(min=0.5, max=1.0)] = 0.98,
    size: Annotated[int, typer.Option(help="Candidate-set size the margins are measured at.")] = 250,
    distractors: Annotated[list[Path], typer.Option(help="More tools.json files for distractors.")] = [],  # noqa: B006
    seed: int = 0,
    limit: LimitOption = None,
    embedder: EmbedderOption = "default",
    fusion: FusionOption = "linear",
    out_path: Annotated[
        Path | None, typer.Option("--out", help="Where to store it (default: the shipped calibration file).")
    ] = None,
    embed_cache: EmbedCacheOption = None,
) -> None:
    """Choose the margin gate's tau: the smallest margin whose automatic decisions reach the target precision."""
    from nexus_gateway.evals.routing import ToolPool, score_cases
    from nexus_gateway.routing.gate import Calibration, calibrate_tau
    from nexus_gateway.routing.hybrid import DEFAULT_CALIBRATION

    pool_tools, loaded = _load(tools, cases, distractors, limit, seed)
    model = _embedder(embedder, embed_cache)
    pool = ToolPool(pool_tools, model)
    queries = model.embed_batch([case.query for case in loaded])
    if embed_cache is not None:
        model.save()
    scored = score_cases(pool, loaded, queries, size, seed, fusion)  # type: ignore[arg-type]
    margins, correct = [s.margin for s in scored], [s.gold_rank == 1 for s in scored]
    tau, precision, coverage = calibrate_tau(margins, correct, target_precision)
    calibration = Calibration(
        tau=round(tau, 6),
        target_precision=target_precision,
        precision=round(precision, 4),
        coverage=round(coverage, 4),
        n_cases=len(loaded),
        embedder=model.name,
        size=size,
        fusion=fusion,
    )
    target = out_path or DEFAULT_CALIBRATION
    if not calibration.save(target):
        raise NexusError(f"could not write {target} (see the warning above)")
    out.print(
        f"tau = {calibration.tau} at N = {size}: automatic on {coverage:.1%} of {len(loaded)} cases with "
        f"precision {precision:.1%} (target {target_precision:.0%}); written to {target}"
    )


@eval_app.command("arguments")
def eval_arguments(
    tools: ToolsOption,
    cases: CasesOption,
    mode: Annotated[
        str, typer.Option(help="splice | signature | prefill: how the tool is shown to the model (as `run_mode`).")
    ] = "splice",
    route: Annotated[bool, typer.Option("--route", help="Let the router choose the tool (else the gold one).")] = False,
    rerank: Annotated[
        int, typer.Option(min=0, max=20, help="With --route: below the gate the local model chooses among this many.")
    ] = 0,
    limit: LimitOption = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the report here.")] = None,
    details: Annotated[
        Path | None,
        typer.Option(
            "--details", help="Write every case here, one JSON line each (request, gold, generated, verdict)."
        ),
    ] = None,
    depth: Annotated[
        int,
        typer.Option(min=0, help="At least this many tokens of earlier turns (whole, generic) in the session first."),
    ] = 0,
    model: Annotated[
        str | None, typer.Option(help="A packaged model's name or a GGUF path (default: qwen2.5-coder-0.5b).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed for sampling with --limit.")] = 0,
    offset: Annotated[
        int, typer.Option(min=0, help="Leave out the cases --limit OFFSET would take (a split disjoint from them).")
    ] = 0,
    copy_bias: Annotated[
        float | None,
        typer.Option(min=0, help="Logits for tokens that copy the request into a string value (0: off; default 2)."),
    ] = None,
    draft_tokens: Annotated[
        int | None,
        typer.Option(min=0, help="Tokens drafted ahead of each decoding pass (0: a token a pass; default 1)."),
    ] = None,
    paraphrase: Annotated[
        bool,
        typer.Option(
            "--paraphrase/--no-paraphrase",
            help="Read enum choices the request names in other words, with the default embedder (paraphrase.py).",
        ),
    ] = True,
    backend: Annotated[
        str, typer.Option(help="local | openai: the model in this process, or on an inference server (--base-url).")
    ] = "local",
    base_url: Annotated[
        str | None, typer.Option(help="With --backend openai: the server's API root (http://127.0.0.1:8080/v1).")
    ] = None,
    api_key: Annotated[str | None, typer.Option(help="With --backend openai: its bearer token.")] = None,
    timeout: Annotated[float, typer.Option(min=1, help="With --backend openai: seconds one request may take.")] = 300,
    compare_local: Annotated[
        bool,
        typer.Option(
            "--compare-local", help="With --backend openai: run the local engine too; report how often they agree."
        ),
    ] = False,
) -> None:
    """Arguments generated by the local model (or an inference server's): JSON and schema validity, exact match,
    time to first token; with --compare-local, agreement between the server's arguments and the local engine's."""
    import anyio

    from nexus_gateway.engine.settings import compiled_root, engine_settings
    from nexus_gateway.evals.arguments import agreement, evaluate_arguments, write_details
    from nexus_gateway.generation.generator import check_mode

    chosen = check_mode(mode)
    pool, loaded = _load(tools, cases, [], limit, seed, offset)
    server = {"backend": backend, "base_url": base_url, "api_key": api_key, "timeout": timeout}
    server = server if backend != "local" else {}
    settings = engine_settings(None, model=model, **server)
    from rich.progress import Progress

    def evaluate(settings: Any, label: str) -> tuple[dict[str, Any], list[Any]]:
        with Progress(console=err, transient=True) as progress:
            task = progress.add_task(f"arguments ({chosen}, {label}) for {len(loaded)} cases", total=len(loaded))

            def advance(done: int, total: int) -> None:
                progress.update(task, completed=done)

            return anyio.run(
                lambda: evaluate_arguments(
                    pool,
                    loaded,
                    settings,
                    mode=chosen,
                    route=route,
                    rerank=rerank if route else 0,
                    depth=depth,
                    compiled_root=compiled_root(settings),
                    progress=advance,
                    copy_bias=copy_bias,
                    draft_tokens=draft_tokens,
                    paraphrase=paraphrase,
                )
            )

    report, outcomes = evaluate(settings, backend)
    if compare_local and backend != "local":
        local_report, local_outcomes = evaluate(engine_settings(None, model=model), "local")
        report["local"] = local_report
        report["agreement"] = agreement(local_outcomes, outcomes)
        share = report["agreement"]["same_arguments"]
        out.print(
            f"agreement with the local engine: {share:.1%} same arguments over {len(loaded)} cases; total p50 "
            f"{report['total_ms_p50']} ms ({backend}) against {local_report['total_ms_p50']} ms (local)"
        )
    title = f"arguments: {report['n_cases']} cases, {chosen}, depth {report['depth']}"
    table = Table(title=title, title_justify="left")
    for key in ("json_valid", "schema_valid", "args_exact", "tool_top1", "end_to_end"):
        table.add_column(key, justify="right")
    table.add_row(
        *(
            f"{report[key]:.1%}" if report[key] is not None else "-"
            for key in ("json_valid", "schema_valid", "args_exact", "tool_top1", "end_to_end")
        )
    )
    out.print(table)
    out.print(f"time to first argument token p50: {report['ttft_ms_p50']} ms; total p50: {report['total_ms_p50']} ms")
    if json_out:
        json_out.write_text(json.dumps(report, indent=2) + "\n")
    if details:
        write_details(outcomes, details)
