"""Routing benchmark: scan latency against catalog size, query embedding, index build time and memory.

Tool texts come from the dev sets when given (else synthetic ones); catalogs larger than the texts at
hand repeat them with a suffix, which changes nothing for scan speed and keeps build cost honest.
"""

from __future__ import annotations

import statistics
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nexus_gateway.routing.embedders import Embedder
from nexus_gateway.routing.slb import SemanticLookasideBuffer

SIZES = (10, 50, 100, 250, 500, 1000, 2500, 5000, 10000)
QUERIES = (
    "what's the weather in Lisbon tomorrow",
    "create a calendar event with Ana on Friday at 3pm",
    "search my notes for the tax receipts",
    "open a bug about the login crash",
    "list files in the docs folder",
    "convert 5pm New York time to Tokyo",
    "show the last three commits",
    "send an email to the team",
)


def _texts(tools_texts: Sequence[str], n: int) -> list[str]:
    base = list(tools_texts) or [f"tool number {i} does task {i % 97} on object {i % 31}" for i in range(1000)]
    return [base[i % len(base)] + (f" (variant {i // len(base)})" if i >= len(base) else "") for i in range(n)]


def _p50_us(fn: Any, arg: Any, repeat: int) -> float:
    fn(arg)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        fn(arg)
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples) / 1000


def _faiss_flat(slb: SemanticLookasideBuffer) -> Any:
    """The same vectors in a faiss flat inner-product index, on one thread: the alternative we measured."""
    import faiss

    faiss.omp_set_num_threads(1)
    index = faiss.IndexFlatIP(slb.embedder.dim)
    index.add(slb.matrix)
    return index


def run_routing_bench(embedder: Embedder, tool_texts: Sequence[str], sizes: Sequence[int] = SIZES) -> dict[str, Any]:
    queries = embedder.embed_batch(list(QUERIES))
    embed_ms = [_p50_us(lambda text: embedder.embed_batch([text]), q, 20) / 1000 for q in QUERIES]
    texts = _texts(tool_texts, max(sizes))
    rows = []
    full = SemanticLookasideBuffer(embedder)
    start = time.perf_counter()
    full.sync([f"t{i}" for i in range(len(texts))], texts)
    per_tool_build_ms = (time.perf_counter() - start) * 1000 / len(texts)
    for size in sizes:
        tracemalloc.start()
        slb = full.subset(range(size))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        repeat = 300 if size <= 1000 else 50
        scans = [_p50_us(slb.scan, q, repeat) for q in queries]
        flat = _faiss_flat(slb)
        faiss_top10 = [_p50_us(lambda v, index=flat: index.search(v[None, :], 10), q, repeat) for q in queries]
        rows.append(
            {
                "tools": size,
                "scan_us_p50": round(statistics.median(scans), 2),
                "faiss_flat_top10_us_p50": round(statistics.median(faiss_top10), 2),
                "index_bytes": int(slb.codes.nbytes + slb.scales.nbytes),
                "scan_matrix_bytes": int(slb.matrix.nbytes),
                "build_peak_bytes": int(peak),
                "build_s_estimate": round(per_tool_build_ms * size / 1000, 3),
            }
        )
    return {
        "embedder": embedder.name,
        "dim": embedder.dim,
        "query_embed_ms_p50": round(statistics.median(embed_ms), 3),
        "embed_ms_per_tool_batched": round(per_tool_build_ms, 3),
        "rows": rows,
    }


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report["rows"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    left.loglog([r["tools"] for r in rows], [r["scan_us_p50"] for r in rows], marker="o")
    left.axhline(10, color="grey", linestyle="--", linewidth=0.8, label="10 us")
    left.set(xlabel="tools in the index", ylabel="scan p50 (us)", title=f"INT8 scan ({report['embedder']})")
    left.legend()
    right.loglog([r["tools"] for r in rows], [r["index_bytes"] / 1024 for r in rows], marker="o", label="INT8 index")
    right.loglog(
        [r["tools"] for r in rows],
        [r["scan_matrix_bytes"] / 1024 for r in rows],
        marker="s",
        label="float32 scan matrix",
    )
    right.set(xlabel="tools in the index", ylabel="KiB", title="memory")
    right.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
