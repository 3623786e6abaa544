"""The model card every training run writes: data summary, the headline held-out figures
(simulated held-out workloads, real leave-one-workload-out), the predicted gain's
calibration, metrics per model and baseline, and plots (predicted vs best size, regret CDF
per predictor) as PNG and one HTML page."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no screen

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from trainer.evaluation import Score  # noqa: E402


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "—" if np.isnan(value) else f"{value:.4f}"
    return html.escape(str(value)) if value is not None else "—"


def _nested_table(rows: Mapping[str, Any]) -> str:
    """A table of ``{row: {column: value}}``."""
    columns = sorted({c for values in rows.values() if isinstance(values, Mapping) for c in values})
    if not columns:
        return "<p>—</p>"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        f"<tr><th>{html.escape(str(name))}</th>"
        + "".join(f"<td>{_fmt(values.get(c))}</td>" for c in columns)
        + "</tr>"
        for name, values in rows.items()
        if isinstance(values, Mapping)
    )
    return f"<table><tr><th></th>{head}</tr>{body}</table>"


def plot_predicted_vs_best(
    path: Path, best: np.ndarray, scores: Mapping[str, Score], names: list[str]
) -> None:
    figure, axis = plt.subplots(figsize=(6, 6))
    for name in names:
        axis.scatter(best, scores[name].predicted, s=6, alpha=0.5, label=name)
    top = max(2.0, float(np.max(best)) * 1.2 if best.size else 2.0)
    axis.plot([1, top], [1, top], color="black", linewidth=0.8)
    axis.set(xscale="log", yscale="log", xlabel="best pool size", ylabel="predicted pool size")
    axis.legend(loc="upper left", fontsize=8)
    axis.set_title("Predicted vs best pool size (held-out workloads)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def plot_regret_cdf(path: Path, scores: Mapping[str, Score]) -> None:
    figure, axis = plt.subplots(figsize=(7, 4.5))
    for name, score in scores.items():
        values = np.sort(score.regrets)
        if values.size:
            axis.step(values, np.arange(1, values.size + 1) / values.size, where="post", label=name)
    axis.set(xlabel="throughput regret", ylabel="share of workloads ≤ regret", xlim=(0, 1))
    axis.grid(alpha=0.3)
    axis.legend(loc="lower right", fontsize=8)
    axis.set_title("Regret CDF per model and baseline")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def write_model_card(
    directory: Path,
    *,
    title: str,
    data_summary: Mapping[str, Any],
    scores: Mapping[str, Score],
    best_sizes: np.ndarray,
    model_names: list[str],
    extra: Mapping[str, Any] | None = None,
    metrics: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``card.html``, ``card.json`` and the two PNG plots into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    plot_predicted_vs_best(directory / "predicted_vs_best.png", best_sizes, scores, model_names)
    plot_regret_cdf(directory / "regret_cdf.png", scores)
    headline = {
        key: (metrics or {}).get(key)
        for key in ("heldout", "predicted_gain", "out_of_distribution")
    }
    document = {
        "title": title,
        "data": dict(data_summary),
        **{key: value for key, value in headline.items() if value},
        "scores": {name: score.as_dict() for name, score in scores.items()},
        **(dict(extra) if extra else {}),
    }
    (directory / "card.json").write_text(json.dumps(document, indent=2, default=str))
    rows = "".join(
        "<tr>"
        f"<td>{html.escape(name)}</td>"
        f"<td>{_fmt(s.regret.median)}</td><td>{_fmt(s.regret.p90)}</td>"
        f"<td>{_fmt(s.regret.mean)}</td><td>{s.regret.count}</td>"
        f"<td>{_fmt(s.log_size_error.median)}</td>"
        f"<td>{_fmt(s.size_ratio.median if s.size_ratio else None)}</td>"
        f"<td>{_fmt(s.size_ratio.p90 if s.size_ratio else None)}</td>"
        f"<td>{_fmt(s.coverage)}</td><td>{_fmt(s.nominal_coverage)}</td>"
        "</tr>"
        for name, s in scores.items()
    )
    summary = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{_fmt(v)}</td></tr>"
        for k, v in data_summary.items()
    )
    extras = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{_fmt(v)}</td></tr>"
        for k, v in (extra or {}).items()
    )
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:960px;margin:2em auto}}
table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}</style>
</head><body>
<h1>{html.escape(title)}</h1>
<h2>Headline: held-out workloads</h2>
<p>Simulated: workloads of held-out groups. Real: leave-one-workload-out — each real workload
group answered by a model trained on everything else (the simulated data included); its
coverage is judged with a calibration fitted on the other groups only.</p>
{_nested_table(headline.get("heldout") or {})}
<h2>Predicted gain</h2>
<p>Predicted throughput at the recommended tuple / at the engine default, against the gain
read off each held-out curve: coverage = share of true gains inside the interval; error as a
share of throughput.</p>
{_nested_table(headline.get("predicted_gain") or {})}
<h2>Out of distribution</h2>
<p>The same held-out profiles moved outside the training ranges: width of the pool size's
range (log size) relative to the in-distribution one, and the share flagged.</p>
{_nested_table({"widening": headline.get("out_of_distribution") or {}})}
<h2>Data</h2><table>{summary}</table>
<h2>Held-out metrics</h2>
<p>Regret = 1 − throughput at the predicted size / throughput at the best size, read off each
workload's stored curve. Size/best is the thread economy: regret does not punish a size far
past the knee of a plateau. Coverage = share of best sizes inside the predicted range.</p>
<table><tr><th>predictor</th><th>median regret</th><th>p90 regret</th><th>mean regret</th>
<th>n</th><th>median |log2 error|</th><th>size/best median</th><th>size/best p90</th>
<th>coverage</th><th>nominal</th></tr>{rows}</table>
<h2>Run</h2><table>{extras}</table>
<h2>Plots</h2>
<img src="predicted_vs_best.png" alt="predicted vs best size">
<img src="regret_cdf.png" alt="regret CDF">
</body></html>
"""
    path = directory / "card.html"
    path.write_text(page)
    return path
