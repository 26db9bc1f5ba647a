"""Engine commands: `compile`, `calibrate splice`, and the `bench fidelity` / `bench ttft` benchmarks.

Registered by cli/main.py (`compile`, `calibrate`) and cli/bench.py (`fidelity`, `ttft`). llama.cpp is
only imported when one of them runs, so the rest of the CLI starts fast.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from nexus_gateway.cli._run import App

if TYPE_CHECKING:
    from collections.abc import Iterator

    from nexus_gateway.bench._cases import BenchCase
    from nexus_gateway.config import GatewayConfig
    from nexus_gateway.engine.runtime import Runtime
    from nexus_gateway.engine.settings import EngineSettings

T = TypeVar("T")
P = ParamSpec("P")
out = Console()
err = Console(stderr=True)
calibrate_app = App(help="Calibrate the local engine for its model.", no_args_is_help=True)

ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="Gateway config (engine settings, upstreams).")]
ModelOpt = Annotated[
    str | None, typer.Option("--model", help="A packaged model's name or a GGUF path (default: qwen2.5-coder-0.5b).")
]
CtxOpt = Annotated[int | None, typer.Option("--n-ctx", help="Context size in tokens (default: 4096).")]
ThreadsOpt = Annotated[
    int | None, typer.Option("--threads", help="CPU threads (default: every core up to 4, else half, up to 8).")
]
GpuOpt = Annotated[int | None, typer.Option("--gpu-layers", help="Layers to offload; -1 for all (Metal, CUDA).")]
CompiledOpt = Annotated[
    Path | None, typer.Option("--compiled", help="compiled_schemas folder (default: beside the gateway state).")
]
LogOpt = Annotated[str, typer.Option(help="Log level (logs go to stderr).")]
_SHIPPED = Path(__file__).resolve().parents[1] / "bench" / "data"
"""The benchmarks' default set, shipped in the package (bench/_cases.py: SHIPPED)."""
ToolsData = Annotated[Path, typer.Option("--tools", help="tools.json of the benchmark set.")]
CasesData = Annotated[Path, typer.Option("--cases", help="cases.jsonl of the benchmark set.")]


def _setup(log_level: str, config: Path | None, **overrides: Any) -> tuple[EngineSettings, Path, GatewayConfig | None]:
    from nexus_gateway.cli._run import load, setup_logging
    from nexus_gateway.engine.settings import compiled_root, engine_settings

    setup_logging(log_level)
    cfg = load(config) if config is not None else None
    compiled = overrides.pop("compiled", None)
    settings = engine_settings(cfg, **overrides)
    return settings, (compiled or compiled_root(settings, cfg)), cfg


def _on_engine(settings: EngineSettings, root: Path, job: Callable[[Runtime], T]) -> T:
    from nexus_gateway.cli._run import run_async
    from nexus_gateway.engine.worker import LocalEngine

    async def main() -> T:
        async with LocalEngine(settings, compiled_root=root) as engine:
            return await engine.run(job)

    return run_async(main)


@contextmanager
def _progress(total: int, label: str) -> Iterator[Callable[[str], None]]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=False) as progress:
        task = progress.add_task(label, total=total)
        yield lambda description: progress.update(task, advance=1, description=description)


def _write(json_out: Path | None, report: dict[str, Any]) -> None:
    text = json.dumps(report, indent=2)
    if json_out is not None:
        json_out.write_text(text + "\n", encoding="utf-8")
        err.print(f"wrote {json_out}")


def _bench_cases(tools: Path, cases: Path, count: int, offset: int) -> tuple[list[BenchCase], list[BenchCase]]:
    """The measured cases, and up to 40 other cases (other tools) whose exchanges fill the session history."""
    from nexus_gateway.bench._cases import load_cases

    chosen = load_cases(tools, cases, count=count, offset=offset)
    others = load_cases(tools, cases, count=40, offset=offset + count, exact=False)
    return chosen, others


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def _floats(text: str) -> list[float]:
    return [float(part) for part in text.split(",") if part.strip()]


def compile_command(
    config: ConfigOpt = None,
    tools: Annotated[Path | None, typer.Option("--tools", help="A tools.json to compile instead of upstreams.")] = None,
    compiled: CompiledOpt = None,
    model: ModelOpt = None,
    n_ctx: CtxOpt = None,
    threads: ThreadsOpt = None,
    gpu_layers: GpuOpt = None,
    log_level: LogOpt = "warning",
) -> None:
    """Compile every tool's schema into a KV block under compiled_schemas/<model fingerprint>/ (incremental)."""
    from nexus_gateway.engine.compiler import CompileReport, compile_tools
    from nexus_gateway.evals.dataset import load_tools, tool_records

    if config is None and tools is None:
        raise typer.BadParameter("give --config (compile the upstreams' tools) or --tools (a tools.json)")
    settings, root, cfg = _setup(
        log_level, config, model=model, n_ctx=n_ctx, threads=threads, gpu_layers=gpu_layers, compiled=compiled
    )
    if tools is not None:
        records = list(tool_records(load_tools(tools), namespaced=True).values())
    else:
        assert cfg is not None
        records = _upstream_records(cfg)
    with _progress(len(records), "compiling") as advance:
        report: CompileReport = _on_engine(
            settings, root, lambda rt: compile_tools(rt, records, lambda record, outcome: advance(record.name))
        )
    out.print(
        f"{report.compiled} compiled, {report.skipped} unchanged, {report.replaced} replaced (invalid), "
        f"{report.too_long} too long; {report.tokens} tokens, {report.bytes / 2**20:.1f} MiB in "
        f"{report.seconds:.1f}s -> {report.directory}"
    )


def _upstream_records(cfg: GatewayConfig) -> list[Any]:
    from nexus_gateway.cli._run import run_async
    from nexus_gateway.gateway import Gateway

    async def main() -> list[Any]:
        async with Gateway(cfg) as gateway:
            await gateway.wait_ready()
            return list(gateway.catalog)

    return run_async(main)


@calibrate_app.command("splice")
def calibrate_splice(
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the cells and the policy here.")] = None,
    tools: ToolsData = _SHIPPED / "tools.json",
    cases: CasesData = _SHIPPED / "cases.jsonl",
    count: Annotated[int, typer.Option(help="Tools (one request each) to calibrate on.")] = 16,
    offset: Annotated[int, typer.Option(help="Skip this many tools (keep them apart from the benchmark's).")] = 40,
    depths: Annotated[str, typer.Option(help="Depths to measure.")] = "0,64,128,256,512,1024,2048",
    fractions: Annotated[str, typer.Option(help="Recompute fractions R below 1 to try.")] = "0,0.25,0.5",
    kl_target: Annotated[float, typer.Option(help="Mean KL (nats) a splice may differ from prefill by.")] = 0.01,
    greedy_tokens: Annotated[int, typer.Option("--greedy", help="Greedy tokens compared with prefill's.")] = 32,
    quick: Annotated[bool, typer.Option(help="8 tools, depths 0,64,256,1024, 16 greedy tokens.")] = False,
    config: ConfigOpt = None,
    compiled: CompiledOpt = None,
    model: ModelOpt = None,
    n_ctx: CtxOpt = None,
    threads: ThreadsOpt = None,
    gpu_layers: GpuOpt = None,
    log_level: LogOpt = "warning",
) -> None:
    """Measure splice fidelity on held-out tools and store P, D and the curve beside the blocks."""
    from nexus_gateway.bench import fidelity
    from nexus_gateway.engine.policy import calibrate, save_policy

    settings, root, _ = _setup(
        log_level, config, model=model, n_ctx=n_ctx, threads=threads, gpu_layers=gpu_layers, compiled=compiled
    )
    depth_list, greedy = (_ints(depths), greedy_tokens) if not quick else ([0, 64, 256, 1024], 16)
    chosen, others = _bench_cases(tools, cases, 8 if quick else count, offset)

    def job(rt: Runtime) -> dict[str, Any]:
        with _progress(len(depth_list) * len(chosen), "calibrating") as advance:
            trials, _ = fidelity.measure(
                rt,
                chosen,
                others,
                depths=depth_list,
                fractions=_floats(fractions),
                greedy_tokens=greedy,
                progress=advance,
            )
        source = f"calibrated on {len(chosen)} tools of {tools}, depths {depth_list}, {greedy} greedy tokens"
        result = calibrate(fidelity.cells(trials), kl_target=kl_target, source=source)
        assert rt.store is not None
        path = save_policy(rt.store.directory, result.policy)
        return {
            "model": f"{rt.model_file.label} ({rt.model.info.description})",
            "kl_target": kl_target,
            "policy": result.policy.to_json(),
            "needed": result.needed,
            "path": str(path),
            "cells": [cell.__dict__ for cell in fidelity.cells(trials)],
        }

    result = _on_engine(settings, root, job)
    _write(json_out, result)
    table = Table(title=f"splice fidelity (target: mean KL <= {kl_target}, 100% top-1 and greedy)")
    for column in ("depth", "R", "KL mean", "top-1", "greedy", "passes"):
        table.add_column(column)
    for cell in result["cells"]:
        passes = cell["kl_mean"] <= kl_target and cell["top1_agree"] >= 1 and cell["greedy_agree"] >= 1
        agree = f"{cell['top1_agree']:.0%}", f"{cell['greedy_agree']:.0%}"
        table.add_row(
            str(cell["depth"]), f"{cell['fraction']:g}", f"{cell['kl_mean']:.4f}", *agree, "yes" if passes else "no"
        )
    out.print(table)
    policy = result["policy"]
    out.print(f"P = {policy['P']}, D = {policy['D']}, curve = {policy['curve']} -> {result['path']}")


def fidelity(
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the results here.")] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write a PNG figure here.")] = None,
    tools: ToolsData = _SHIPPED / "tools.json",
    cases: CasesData = _SHIPPED / "cases.jsonl",
    count: Annotated[int, typer.Option(help="Tools (one request each) to measure.")] = 20,
    offset: Annotated[int, typer.Option(help="Skip this many tools first.")] = 0,
    kl_target: Annotated[float, typer.Option(help="KL residual (nats) for the figure and in-run calibration.")] = 0.01,
    quick: Annotated[bool, typer.Option(help="8 tools, depths 0,64,256,1024, 16 greedy tokens.")] = False,
    noise_floor: Annotated[
        bool, typer.Option(help="Only measure llama.cpp's own prefill-vs-prefill drift (cells, batching).")
    ] = False,
    config: ConfigOpt = None,
    compiled: CompiledOpt = None,
    model: ModelOpt = None,
    n_ctx: CtxOpt = None,
    threads: ThreadsOpt = None,
    gpu_layers: GpuOpt = None,
    log_level: LogOpt = "warning",
) -> None:
    """KL, top-1 and greedy agreement of splice (+ recompute) against prefill, by depth and R; K-variance proxy."""
    from nexus_gateway.bench import fidelity as bench
    from nexus_gateway.engine.policy import calibrate

    settings, root, _ = _setup(
        log_level, config, model=model, n_ctx=n_ctx, threads=threads, gpu_layers=gpu_layers, compiled=compiled
    )
    depths, greedy = (list(bench.DEPTHS), 32) if not quick else ([0, 64, 256, 1024], 16)
    chosen, others = _bench_cases(tools, cases, 8 if quick else count, offset)
    if noise_floor:
        floor = _on_engine(settings, root, lambda rt: bench.noise_floor(rt, chosen, others, depths=depths))
        _write(json_out, {"noise_floor_kl_mean": floor})
        out.print_json(json.dumps(floor))
        return

    def job(rt: Runtime) -> tuple[dict[str, Any], dict[str, Any], dict[int, float]]:
        with _progress(len(depths) * len(chosen), "fidelity") as advance:
            trials, proxies = bench.measure(rt, chosen, others, depths=depths, greedy_tokens=greedy, progress=advance)
        policy = rt.policy
        if policy.source.startswith("default"):
            err.print(
                "[yellow]no calibrated splice policy for this model: labelling rows with one calibrated on "
                "this run (in-sample); run `nexus-gateway calibrate splice` first[/]"
            )
            policy = calibrate(bench.cells(trials), kl_target=kl_target, source="in-sample").policy
        model_name = f"{rt.model_file.label} ({rt.model.info.description})"
        _, per_depth = bench.drift_proxy_spearman(trials, proxies)
        return bench.report(model_name, trials, policy, proxies), policy.to_json(), per_depth

    report, policy, per_depth = _on_engine(settings, root, job)
    _write(json_out, report)
    if plot is not None:
        from nexus_gateway.bench._plots import fidelity_plot

        fidelity_plot(report, policy, plot, kl_target)
        err.print(f"wrote {plot}")
    out.print_json(json.dumps(report))
    err.print(
        f"policy: P={policy['P']} D={policy['D']} ({policy['source']}); drift proxy Spearman per depth: {per_depth}"
    )


def ttft(
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the results here.")] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write a PNG figure here.")] = None,
    tools: ToolsData = _SHIPPED / "tools.json",
    cases: CasesData = _SHIPPED / "cases.jsonl",
    count: Annotated[int, typer.Option(help="Tools (one request each) to time.")] = 10,
    repeats: Annotated[int, typer.Option(help="Measured repetitions of every case and mode.")] = 2,
    memory: Annotated[bool, typer.Option(help="Also measure resident memory with 1, 4 and 8 sessions.")] = True,
    quick: Annotated[bool, typer.Option(help="5 tools, 2 repeats, depths 0,256,1024.")] = False,
    config: ConfigOpt = None,
    compiled: CompiledOpt = None,
    model: ModelOpt = None,
    n_ctx: CtxOpt = None,
    threads: ThreadsOpt = None,
    gpu_layers: GpuOpt = None,
    log_level: LogOpt = "warning",
) -> None:
    """Time to first argument token: full-schema prefill vs signature vs splice, by depth; block size; memory."""
    from nexus_gateway.bench import ttft as bench

    settings, root, _ = _setup(
        log_level, config, model=model, n_ctx=n_ctx, threads=threads, gpu_layers=gpu_layers, compiled=compiled
    )
    depths = list(bench.DEPTHS) if not quick else [0, 256, 1024]
    repeats = 2 if quick else repeats
    chosen, others = _bench_cases(tools, cases, 5 if quick else count, 0)

    def job(rt: Runtime) -> dict[str, Any]:
        with _progress(len(depths) * (repeats + 1), "time to first token") as advance:
            return bench.measure(rt, chosen, others, depths=depths, repeats=repeats, progress=advance)

    report = _on_engine(settings, root, job)
    if memory:
        report["memory"] = bench.memory(settings, root, chosen[:3])
    _write(json_out, report)
    if plot is not None:
        from nexus_gateway.bench._plots import ttft_plot

        ttft_plot(report, plot)
        err.print(f"wrote {plot}")
    out.print_json(json.dumps(report))


def memory(
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the results here.")] = None,
    tools: ToolsData = _SHIPPED / "tools.json",
    cases: CasesData = _SHIPPED / "cases.jsonl",
    count: Annotated[int, typer.Option(help="Tools whose blocks every session splices.")] = 3,
    sessions: Annotated[str, typer.Option(help="Session counts, one fresh process each; the first must be 1.")] = (
        "1,8"
    ),
    config: ConfigOpt = None,
    compiled: CompiledOpt = None,
    model: ModelOpt = None,
    n_ctx: CtxOpt = None,
    threads: ThreadsOpt = None,
    log_level: LogOpt = "warning",
) -> None:
    """Compiled block bytes per token, and resident memory of 1 and 8 sessions splicing the same blocks."""
    from nexus_gateway.bench import memory as bench

    counts = _ints(sessions)
    if not counts or counts[0] != 1 or min(counts) < 1:
        raise typer.BadParameter("a comma-separated list of session counts starting with 1, e.g. 1,8")
    settings, root, _ = _setup(log_level, config, model=model, n_ctx=n_ctx, threads=threads, compiled=compiled)
    settings = settings.model_copy(update={"sessions": max(max(counts), settings.sessions)})
    chosen, _ = _bench_cases(tools, cases, count, 0)
    report = _on_engine(settings, root, lambda rt: bench.block_sizes(rt, chosen))
    report |= bench.session_memory(settings, root, chosen, counts)
    _write(json_out, report)
    out.print_json(json.dumps(report))
