"""PNG figures for the benchmarks (needs matplotlib: `pip install matplotlib`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nexus_gateway.errors import ConfigError


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ConfigError("--plot needs matplotlib: pip install matplotlib") from exc
    return plt


def _policy_band(axis: Any, p: int, d: int) -> None:
    """Shade where the policy splices and recomputes (log depth axis; depth 0 is drawn at 1)."""
    left = 0.8
    if p >= 0:
        axis.axvspan(left, max(p, 1) * 1.2, color="tab:green", alpha=0.1, label=f"splice (depth <= P={p})")
    if d - 1 > p:
        axis.axvspan(max(p, 1) * 1.2, d, color="tab:orange", alpha=0.08, label=f"recompute (P < depth < D={d})")
    axis.set_xlim(left=left)


def fidelity_plot(report: dict[str, Any], policy: dict[str, Any], path: Path, kl_target: float) -> None:
    plt = _pyplot()
    rows = report["rows"]
    fractions = sorted({row["R"] for row in rows})
    figure, (kl_axis, top1_axis, greedy_axis) = plt.subplots(1, 3, figsize=(16, 4.8))
    for fraction in fractions:
        chosen = [row for row in rows if row["R"] == fraction]
        depths = [max(row["depth"], 1) for row in chosen]
        line = kl_axis.plot(depths, [max(row["kl_mean"], 1e-7) for row in chosen], marker="o", label=f"R={fraction:g}")
        kl_axis.plot(depths, [max(row["kl_max"], 1e-7) for row in chosen], ls=":", color=line[0].get_color())
        top1_axis.plot(depths, [row["top1_agree"] for row in chosen], marker="o", label=f"R={fraction:g}")
        greedy_axis.plot(depths, [row["greedy_agree"] for row in chosen], marker="o", label=f"R={fraction:g}")
    kl_axis.axhline(kl_target, color="black", ls="--", lw=1, label=f"target {kl_target:g} nats")
    kl_axis.set_yscale("log")
    kl_axis.set_title("KL(prefill || splice), mean (solid), max (dotted); 0 drawn at 1e-7")
    top1_axis.set_title("top-1 agreement with prefill")
    greedy_axis.set_title("32-token greedy agreement with prefill")
    rho = report.get("drift_proxy_spearman")
    figure.suptitle(
        f"{report['model']}: splice fidelity by depth (depth 0 drawn at 1); P={policy['P']}, D={policy['D']}; "
        f"K-variance drift proxy Spearman {rho if rho is None else round(rho, 3)}"
    )
    for axis in (kl_axis, top1_axis, greedy_axis):
        axis.set_xscale("log", base=2)
        axis.set_xlabel("depth (session tokens between preamble and tool)")
        _policy_band(axis, policy["P"], policy["D"])
        axis.grid(alpha=0.3)
    kl_axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def ttft_plot(report: dict[str, Any], path: Path) -> None:
    plt = _pyplot()
    rows = report["rows"]
    figure, (time_axis, ratio_axis) = plt.subplots(1, 2, figsize=(13, 4.8))
    for mode in ("prefill", "signature", "splice"):
        chosen = [row for row in rows if row["mode"] == mode]
        time_axis.plot([max(r["depth"], 1) for r in chosen], [r["ttft_ms_p50"] for r in chosen], marker="o", label=mode)
    raw = [row for row in rows if row["mode"] == "splice"]
    raw_depths = [max(r["depth"], 1) for r in raw]
    time_axis.plot(raw_depths, [r["splice_raw_ms_p50"] for r in raw], ls=":", label="pure splice")
    ratios = report["ratios"]
    for key, label in (
        ("prefill_over_splice", "prefill / splice (policy)"),
        ("prefill_over_signature", "prefill / signature"),
        ("prefill_over_raw_splice", "prefill / pure splice"),
    ):
        ratio_axis.plot([max(r["depth"], 1) for r in ratios], [r[key] for r in ratios], marker="o", label=label)
    ratio_axis.axhline(3.0, color="black", ls="--", lw=1, label="3x target")
    time_axis.set_yscale("log")
    time_axis.set_title("time to first argument token, p50 (ms)")
    ratio_axis.set_title("speed-up over full-schema prefill")
    for axis in (time_axis, ratio_axis):
        axis.set_xscale("log", base=2)
        axis.set_xlabel("depth (depth 0 drawn at 1)")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    figure.suptitle(f"P={report['P']}, D={report['D']}; {report['block_bytes_per_token']:.0f} bytes per block token")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def proxy_plot(report: dict[str, Any], path: Path) -> None:
    """`bench proxy`: added latency, CPU per call, calls/s by concurrency, cold start and RSS, one bar per proxy."""
    plt = _pyplot()
    rows = [*report["nexus"], *report["peers"]]
    labels = [f"{row['name']}\n{row['transport']}" for row in rows]
    colors = ["tab:blue" if row["name"] == "nexus-gateway" else "tab:gray" for row in rows]
    figure, axes = plt.subplots(1, 5, figsize=(24, 5))
    panels = (
        ("added_ms_p50", "added latency p50 vs direct stdio (ms)"),
        ("cpu_ms_per_call", "proxy CPU per call (ms)"),
        (None, "calls/s by concurrent clients"),
        ("cold_start_s", "cold start to first tools/list (s)"),
        ("rss_mb", "RSS after tools/list (MB)"),
    )
    for axis, (key, title) in zip(axes, panels, strict=True):
        positions = list(range(len(rows)))
        if key is None:
            levels = sorted({level for row in rows for level in row["calls_per_s"]}, key=int)
            width = 0.8 / max(len(levels), 1)
            for index, level in enumerate(levels):
                values = [row["calls_per_s"].get(level, 0.0) for row in rows]
                axis.bar([p + index * width for p in positions], values, width, label=f"{level} clients")
            axis.set_xticks(
                [p + width * (len(levels) - 1) / 2 for p in positions], labels, fontsize=7, rotation=30, ha="right"
            )
            axis.legend(fontsize=7)
        else:
            axis.bar(positions, [row[key] for row in rows], color=colors)
            axis.set_xticks(positions, labels, fontsize=7, rotation=30, ha="right")
        axis.set_title(title, fontsize=9)
        axis.grid(axis="y", alpha=0.3)
    figure.suptitle(
        f"{report['rounds']} interleaved rounds x {report['calls_per_round']} calls; "
        f"direct stdio p50 {report['direct_ms_p50']:.3f} ms"
    )
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
