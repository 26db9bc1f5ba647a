"""`nexus-gateway index examples`: usage examples for a tools.json, written offline by the local model.

The output is an example cache file (generation/example_cache.py, the format the gateway keeps in its state
dir); a run that stops is resumed by running it again (tools already in the file are skipped).
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from nexus_gateway.cli._run import App, run_async

index_app = App(help="Build index material offline.", no_args_is_help=True)
err = Console(stderr=True)


@index_app.command("examples")
def index_examples(
    tools: Annotated[Path, typer.Option("--tools", help="tools.json: a JSON array of MCP Tool objects.")],
    out: Annotated[Path, typer.Option("--out", help="The example cache to write (resumed when it exists).")],
    first: Annotated[
        list[Path] | None,
        typer.Option("--first", help="cases.jsonl whose gold tools and alternatives are written first."),
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Write at most this many tools (first ones first).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the order of the other tools.")] = 0,
    batch: Annotated[int, typer.Option(help="Tools written at once (one batched decode).")] = 8,
    threads: Annotated[int, typer.Option(help="CPU threads of the model.")] = 1,
    model: Annotated[str | None, typer.Option(help="Engine model (registry name or GGUF path).")] = None,
    nice: Annotated[int, typer.Option(help="Raise this process's niceness by this much.")] = 10,
) -> None:
    """Write 3-4 short example requests per tool with the local model, into an example cache file."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from nexus_gateway.engine.settings import EngineSettings
    from nexus_gateway.engine.worker import LocalEngine
    from nexus_gateway.evals.dataset import load_cases, load_tools, tool_records
    from nexus_gateway.generation.example_cache import ExampleCache
    from nexus_gateway.generation.examples import ModelExampleWriter, Written

    if nice:
        os.nice(nice)
    records = list(tool_records(load_tools(tools)).values())
    wanted = {name for path in first or [] for case in load_cases(path) for name in case.right}
    random.Random(seed).shuffle(records)
    records.sort(key=lambda record: record.name not in wanted)  # stable: the first ones, then the shuffle
    cache = ExampleCache(out)
    todo = [record for record in records if record.content_hash not in cache]
    todo = list({record.content_hash: record for record in todo}.values())[:limit]
    err.print(f"{len(records)} tools, {len(records) - len(todo)} already written, {len(todo)} to write")
    settings = EngineSettings(model=model, sessions=batch + 1, threads=threads)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())

    async def main() -> None:
        started, tokens, last_save = time.perf_counter(), 0, time.monotonic()
        async with LocalEngine(settings) as engine:
            with Progress(*columns, console=err) as progress:
                task = progress.add_task("examples", total=len(todo))

                def done(written: Written) -> None:
                    nonlocal tokens, last_save
                    cache.put(written.content_hash, written.examples, written.model)
                    tokens += written.decoded_tokens
                    rate = tokens / (time.perf_counter() - started)
                    progress.update(task, advance=1, description=f"examples ({rate:.1f} tok/s)")
                    if time.monotonic() - last_save > 20:
                        cache.save()
                        last_save = time.monotonic()

                try:
                    await ModelExampleWriter(engine, batch=batch).write(todo, done)
                finally:
                    cache.save()
        elapsed = time.perf_counter() - started
        err.print(
            f"wrote {len(todo)} tools in {elapsed:.0f} s ({len(todo) / max(elapsed, 1e-9):.3f} tools/s, "
            f"{tokens / max(elapsed, 1e-9):.1f} tok/s) to {out}"
        )

    run_async(main)
