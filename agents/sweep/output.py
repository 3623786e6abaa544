"""A measured curve as CSV files, a PNG and a text table.

matplotlib is imported only when a plot is written: it comes with the trainer extra, not
the agent's, and the plot is skipped with a logged note when it is absent.
"""

from __future__ import annotations

import csv
import logging
import math
from pathlib import Path

from agents.sweep.curve import SweepResult

logger = logging.getLogger(__name__)

CURVE_CSV_COLUMNS = (
    "knob",
    "value",
    "throughput_mean",
    "throughput_std",
    "cv",
    "samples",
    "latency_ms",
    "other_cpu_cores",
    "is_best",
    "is_knee",
    "is_smallest_within_noise",
)
SAMPLE_CSV_COLUMNS = (
    "knob",
    "value",
    "repeat",
    "visit",
    "index",
    "t_s",
    "duration_s",
    "throughput",
    "latency_ms",
    "discarded",
    "server_cpu_cores",
    "load_cpu_cores",
    "other_cpu_cores",
    "stalled",
    "lock_waits",
    "stall_wakes_per_s",
)


def _cell(value: float | int | None) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if not math.isfinite(value) else f"{value:.6g}"
    return str(value)


def samples_csv_path(curve_csv: Path) -> Path:
    return curve_csv.with_name(f"{curve_csv.stem}-samples.csv")


def write_csv(result: SweepResult, path: Path) -> tuple[Path, Path]:
    """The curve (one row per value) at ``path`` and every sample beside it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    best, knee, within = result.best_value, result.knee, result.best_within_noise
    with path.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(CURVE_CSV_COLUMNS)
        for p in result.points:
            writer.writerow(
                [
                    result.knob,
                    p.value,
                    _cell(p.mean),
                    _cell(p.std),
                    _cell(p.cv),
                    p.count,
                    _cell(p.latency_ms),
                    _cell(p.other_cpu),
                    int(p.value == best),
                    int(p.value == knee),
                    int(p.value == within),
                ]
            )
    samples_path = samples_csv_path(path)
    with samples_path.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(SAMPLE_CSV_COLUMNS)
        for s in result.samples:
            writer.writerow(
                [
                    result.knob,
                    s.value,
                    s.repeat,
                    s.visit,
                    s.index,
                    _cell(s.t_s),
                    _cell(s.duration_s),
                    _cell(s.throughput),
                    _cell(s.latency_ms),
                    int(s.discarded),
                    _cell(s.server_cpu),
                    _cell(s.load_cpu),
                    _cell(s.other_cpu),
                    _cell(None if s.stalled is None else int(s.stalled)),
                    _cell(s.lock_waits),
                    _cell(s.stall_wakes),
                ]
            )
    return path, samples_path


def write_plot(result: SweepResult, path: Path, *, title: str | None = None) -> Path | None:
    """A PNG of the curve (mean ± std, every kept sample, best and knee marked).

    Returns None, with a logged note, when matplotlib is not installed (it comes with the
    trainer extra, not the agent's).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        logger.info("matplotlib is not installed: no plot (pip install 'pooltune[trainer]')")
        return None
    figure, axes = plt.subplots(figsize=(7, 4.2), dpi=110)
    try:
        measured = [p for p in result.points if p.count]
        xs = [p.value for p in measured]
        for p in measured:
            axes.scatter([p.value] * p.count, p.samples, s=8, color="0.6", zorder=1)
        axes.errorbar(
            xs,
            [p.mean for p in measured],
            yerr=[0.0 if math.isnan(p.std) else p.std for p in measured],
            marker="o",
            capsize=3,
            zorder=2,
            label="mean ± std",
        )
        if result.best_value is not None:
            axes.axvline(result.best_value, color="tab:green", linestyle="--", label="best")
        if result.knee is not None:
            axes.axvline(result.knee, color="tab:orange", linestyle=":", label="knee (95%)")
        if xs and min(xs) > 0 and max(xs) / min(xs) >= 8:
            axes.set_xscale("log", base=2)
            axes.set_xticks(xs, [str(x) for x in xs])
        axes.set_xlabel(result.knob)
        unit = "transactions/s" if result.plan.metric == "transactions" else "queries/s"
        axes.set_ylabel(unit)
        noise = result.noise
        noise_text = f"noise (median CV) {noise:.1%}" if math.isfinite(noise) else ""
        axes.set_title(title or f"{result.knob} sweep  {noise_text}", fontsize=10)
        axes.set_ylim(bottom=0)
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8, loc="lower right")
        figure.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path)
    finally:
        plt.close(figure)
    return path


def format_table(result: SweepResult, *, width: int = 30) -> str:
    """The curve as a text table for the terminal, with a bar per value."""
    unit = "tps" if result.plan.metric == "transactions" else "qps"
    best, knee, within = result.best_value, result.knee, result.best_within_noise
    top = max((p.mean for p in result.points if p.count), default=0.0)
    has_latency = any(p.latency_ms is not None for p in result.points)
    header = f"{result.knob:>24} {'mean ' + unit:>12} {'std':>9} {'cv':>6} {'n':>4}"
    if has_latency:
        header += f" {'lat ms':>8}"
    lines = [header, "-" * (len(header) + width + 2)]
    for p in result.points:
        if not p.count:
            lines.append(f"{p.value:>24} {'(no samples)':>12}")
            continue
        marks = []
        if p.value == best:
            marks.append("best")
        if p.value == within and within != best:
            marks.append("smallest within noise")
        if p.value == knee:
            marks.append("knee")
        bar = "#" * (round(width * p.mean / top) if top > 0 else 0)
        cv = f"{p.cv:.1%}" if math.isfinite(p.cv) else "-"
        std = f"{p.std:.1f}" if math.isfinite(p.std) else "-"
        line = f"{p.value:>24} {p.mean:>12.1f} {std:>9} {cv:>6} {p.count:>4}"
        if has_latency:
            line += f" {p.latency_ms:>8.2f}" if p.latency_ms is not None else f" {'-':>8}"
        lines.append(f"{line}  {bar:<{width}} {', '.join(marks)}".rstrip())
    noise = result.noise
    lines.append("")
    lines.append(
        f"best {result.knob}={best}, smallest within the noise={within}, knee={knee}; "
        f"noise (median CV of a point) " + (f"{noise:.1%}" if math.isfinite(noise) else "unknown")
    )
    other = result.other_cpu
    if other is not None:
        lines.append(f"other processes used {other:.2f} cores on average during the sweep")
    lines.append(f"original tuple restored: {result.restored}")
    return "\n".join(lines)
