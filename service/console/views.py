"""What the pages show, derived from rows: an agent's phase, fleet rows, the model card."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agents import knobs
from service.approvals.models import Approval, ApprovalState


def agent_phase(
    *,
    has_agent: bool,
    last_report_at: datetime | None,
    converged: bool | None,
    approval: Approval | None,
) -> str:
    """Where the host's agent stands, from what the service knows (docs/console.md)."""
    if not has_agent:
        return "dataset"
    if approval is not None:
        if approval.state == ApprovalState.PENDING.value:
            return "awaiting approval"
        decided = approval.decided_at
        newer = decided is not None and (last_report_at is None or decided > last_report_at)
        if newer and approval.state == ApprovalState.APPROVED.value:
            return "climbing (approved)"
        if newer and approval.state in (ApprovalState.REJECTED.value, ApprovalState.EXPIRED.value):
            return f"idle ({approval.state})"
    if last_report_at is None:
        return "enrolled"
    return "optimized" if converged else "gave up"


@dataclass(frozen=True, slots=True)
class Gain:
    estimate: float
    low: float | None = None
    high: float | None = None


def gain_of(estimate: float | None, low: float | None, high: float | None) -> Gain | None:
    return None if estimate is None else Gain(estimate=estimate, low=low, high=high)


def knob_rows(
    engine: str, cpu_count: int, in_force: Mapping[str, Any] | None
) -> list[dict[str, Any]]:
    """The tuned knobs: the value in force (if known) beside the engine's default."""
    defaults = knobs.default_tuple(engine, cpu_count)
    current = dict(in_force or {})
    names = list(defaults) + sorted(set(current) - set(defaults))
    return [
        {
            "name": name,
            "value": current.get(name),
            "default": defaults.get(name),
            "differs": name in current and current.get(name) != defaults.get(name),
        }
        for name in names
    ]


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _bars(scores: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Mean / median / p90 regret per predictor, scaled for an SVG bar chart."""
    rows: list[dict[str, Any]] = []
    for name, score in scores.items():
        regret = score.get("regret") or {}
        rows.append(
            {
                "name": name,
                "mean": _finite(regret.get("mean")),
                "median": _finite(regret.get("median")),
                "p90": _finite(regret.get("p90")),
            }
        )
    values = [row[key] for row in rows for key in ("mean", "median", "p90")]
    peak = max((float(v) for v in values if v is not None), default=0.0)
    scale = 1.0 / peak if peak > 0 else 0.0
    for row in rows:
        for key in ("mean", "median", "p90"):
            value = row[key]
            row[f"{key}_width"] = round(float(value or 0.0) * scale * 300, 1)
    return rows


HEADLINE = (
    "regret",
    "regret_median",
    "regret_p90",
    "log_size_error_median",
    "coverage",
    "nominal_coverage",
    "best_baseline",
    "best_baseline_regret",
)


def model_card(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The card's parts that the registry holds (docs/console.md, "Models")."""
    scores: Mapping[str, Any] = metrics.get("scores") or {}
    card_plots: Mapping[str, Any] = metrics.get("card") or {}
    known = set(HEADLINE) | {"scores", "card", "heldout", "predicted_gain"}
    return {
        "headline": [(name, metrics.get(name)) for name in HEADLINE if name in metrics],
        "scores": scores,
        "bars": _bars(scores),
        "heldout": metrics.get("heldout") or {},
        "predicted_gain": metrics.get("predicted_gain") or {},
        "regret_cdf": card_plots.get("regret_cdf") or {},
        "predicted_vs_best": card_plots.get("predicted_vs_best") or {},
        "other": sorted(
            (name, value)
            for name, value in metrics.items()
            if name not in known and not isinstance(value, dict | list)
        ),
    }


def regret_cdf_series(curves: Mapping[str, Sequence[float]]) -> dict[str, Any]:
    """Each predictor's sorted regrets as (regret, share ≤ regret) on one shared x axis."""
    xs = sorted({round(float(v), 6) for values in curves.values() for v in values})
    series: dict[str, list[float | None]] = {}
    for name, values in curves.items():
        ordered = sorted(float(v) for v in values)
        count = len(ordered)
        column: list[float | None] = []
        index = 0
        for x in xs:
            while index < count and ordered[index] <= x + 1e-12:
                index += 1
            column.append(index / count if count else None)
        series[name] = column
    return {"x": xs, "series": series}
