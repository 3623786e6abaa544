"""Training, evaluation and the promotion gate as plain functions over examples.

The CLI parses and delegates here; tests call these directly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from agents import knobs
from agents.knobs import Engine
from service.recommendations.intervals import REAL, SIMULATED, pick
from service.recommendations.tuple_model import TupleModel
from trainer.card import write_model_card
from trainer.evaluation import (
    GainScore,
    Score,
    baseline_predictors,
    best_baseline,
    evaluate,
    ood_widening,
    score_gains,
)
from trainer.examples import Example, groups, holdout_split
from trainer.fit import SklearnSizeModel
from trainer.realscore import NEAR_BEST, RealScore, score_real
from trainer.search import SearchConfig, SearchResult, data_fingerprint, search_lightgbm

#: Baselines a model must beat ("2cores+disk" is scored for PgBouncer only).
BASELINES = ("default", "heuristic", "little", "nearest", "2cores+disk")
#: Fewer workload groups than this cannot be split into train, validation and evaluation sets
#: that say anything.
MIN_GROUPS = 30


class NotEnoughDataError(ValueError):
    pass


@dataclass
class TrainOutcome:
    model: TupleModel
    search: SearchResult
    scores: dict[str, Score]
    #: The real cross-validation's scores (None without real workloads).
    real: RealScore | None
    metrics: dict[str, Any]
    training_summary: dict[str, Any]
    card_path: Path | None


def check_enough(
    examples: Sequence[Example], *, engine: Engine, min_groups: int = MIN_GROUPS
) -> None:
    found = len(groups(examples))
    if found < min_groups:
        raise NotEnoughDataError(
            f"{found} workload groups for {engine.value}; training needs at least {min_groups} "
            f"(converged reports from different hosts, or import a dataset: "
            f"pooltune-trainer import-dataset sim-v1)"
        )


def summarise(examples: Sequence[Example]) -> dict[str, Any]:
    sizes = np.array([e.optimal_size for e in examples], dtype=np.float64)
    cores = np.array([e.host.cpu_count for e in examples], dtype=np.float64)
    origins: dict[str, int] = {}
    for e in examples:
        kind = e.origin.split(":", 2)[0] + (
            ":" + e.origin.split(":")[1] if e.origin.startswith("dataset") else ""
        )
        origins[kind] = origins.get(kind, 0) + 1
    return {
        "examples": len(examples),
        "groups": len(groups(examples)),
        "with_curve": sum(e.curve is not None for e in examples),
        "optimal_size_median": float(np.median(sizes)) if sizes.size else math.nan,
        "optimal_size_range": [float(sizes.min()), float(sizes.max())] if sizes.size else [],
        "cpu_count_range": [float(cores.min()), float(cores.max())] if cores.size else [],
        "origins": origins,
    }


def score_metrics(
    scores: dict[str, Score],
    model_name: str,
    *,
    real: RealScore | None = None,
    gains: Mapping[str, GainScore] | None = None,
    ood: Mapping[str, float] | None = None,
    weighting: str = "",
) -> dict[str, Any]:
    """The registry's metrics. ``regret`` (mean, lower is better) is what the service's own
    gate compares: the simulated held-out figure, or the real cross-validation's when there
    is no simulated test set. ``heldout`` holds both, ``predicted_gain`` the gains'
    calibration by domain (docs/console.md reads them)."""
    heldout: dict[str, Any] = {}
    metrics: dict[str, Any] = {}
    if model_name in scores:
        model = scores[model_name]
        baseline = best_baseline(scores, BASELINES)
        metrics = {
            "regret": model.regret.mean,
            "regret_median": model.regret.median,
            "regret_p90": model.regret.p90,
            "log_size_error_median": model.log_size_error.median,
            "coverage": model.coverage,
            "nominal_coverage": model.nominal_coverage,
            "best_baseline": baseline.name,
            "best_baseline_regret": baseline.regret.mean,
        }
        heldout[SIMULATED] = {
            "regret": model.regret.mean,
            "regret_median": model.regret.median,
            "regret_p90": model.regret.p90,
            "within_5pct": float(np.mean(model.regrets <= NEAR_BEST)),
            "coverage": model.coverage,
            "count": model.regret.count,
            "best_baseline": baseline.name,
            "best_baseline_regret": baseline.regret.mean,
        }
    if real is not None:
        heldout[REAL] = real.as_dict()
        if not metrics:
            metrics = {
                "regret": real.scores["lightgbm"].regret.mean,
                "coverage": real.coverage,
                "nominal_coverage": real.nominal,
            }
        metrics["real_regret"] = real.scores["lightgbm"].regret.mean
        metrics["real_default_regret"] = real.scores["default"].regret.mean
    metrics["scores"] = {name: score.as_dict() for name, score in scores.items()}
    metrics["heldout"] = heldout
    if gains:
        metrics["predicted_gain"] = {domain: g.as_dict() for domain, g in gains.items()}
    if ood:
        metrics["out_of_distribution"] = dict(ood)
    if weighting:
        metrics["weighting"] = weighting
    metrics["card"] = card_arrays(scores, real)
    return metrics


def card_arrays(scores: Mapping[str, Score], real: RealScore | None) -> dict[str, Any]:
    """What the console plots: regret per held-out workload per predictor, and predicted vs
    best sizes (``metrics["card"]``, docs/console.md); at most 500 points per series."""
    source = scores or (real.scores if real is not None else {})
    regret_cdf = {
        name: [round(float(v), 5) for v in score.regrets[:500]] for name, score in source.items()
    }
    predicted: dict[str, list[float]] = {}
    best: list[float] = []
    for name, score in source.items():
        predicted[name] = [float(v) for v in score.predicted[:500]]
        if not best:
            best = [float(v) for v in score.best[:500]]
    return {"regret_cdf": regret_cdf, "predicted_vs_best": {"best": best, "predicted": predicted}}


def train(
    examples: Sequence[Example],
    *,
    engine: Engine,
    config: SearchConfig,
    test_fraction: float = 0.2,
    card_dir: Path | None = None,
    on_stage: Callable[[str], None] | None = None,
    min_groups: int = MIN_GROUPS,
) -> TrainOutcome:
    """Search, fit, and score against the baselines: on held-out simulated workload groups,
    and by cross-validation on the real ones (at least ``min_groups`` groups in all)."""
    stage = on_stage or (lambda _stage: None)
    check_enough(examples, engine=engine, min_groups=min_groups)
    train_set, test_set = holdout_split(examples, test_fraction=test_fraction, seed=config.seed)
    stage("searching LightGBM hyper-parameters")
    search = search_lightgbm(engine, train_set, replace(config, on_stage=stage))
    model = search.model
    nominal = model.nominal_coverage
    scores: dict[str, Score] = {}
    gains: dict[str, GainScore] = {}
    if test_set:
        stage("scoring the held-out simulated workloads")
        alternative = SklearnSizeModel(
            seed=config.seed, real_share=config.weighting.real_share
        ).fit(train_set)
        scores = evaluate(
            test=test_set,
            models={"lightgbm": model},
            predictors=baseline_predictors(train_set) | {"sklearn-hgb": alternative.predict},
        )
        simulated_gain = score_gains(model, test_set, domain=SIMULATED)
        if simulated_gain is not None:
            gains[SIMULATED] = simulated_gain
    real = None
    if REAL in search.held_out:
        size_name = knobs.POOL_SIZE_KNOB[engine]
        real = score_real(
            search.held_out[REAL],
            nominal=nominal,
            fallback=pick(model.knob_models[size_name].calibration, SIMULATED),
            gain_fallback=pick(model.curve.calibration, SIMULATED) if model.curve else None,
        )
        if real.gain is not None:
            gains[REAL] = real.gain
    if not scores and real is None:
        raise NotEnoughDataError("nothing to score on: no held-out workload has a curve")
    ood = ood_widening(
        model,
        (test_set or train_set)[:500],
        domain=SIMULATED if test_set else model.domain,
        trained=train_set,
    )
    metrics = score_metrics(
        scores, "lightgbm", real=real, gains=gains, ood=ood, weighting=config.weighting.label
    )
    summary = summarise(examples) | {
        "train_examples": len(train_set),
        "test_examples": len(test_set),
        "test_fingerprint": data_fingerprint(test_set),
        "real_fingerprint": data_fingerprint([e for e in examples if e.is_real]),
        "split_seed": config.seed,
        "test_fraction": test_fraction,
        "study": search.study_name,
        "trials": search.trials,
        "best_params": search.best_params,
        "weighting": config.weighting.label,
        "serves_calibration": model.domain,
    }
    card_path = None
    if card_dir is not None:
        stage("writing the model card")
        card_scores = scores or (real.scores if real is not None else {})
        card_path = write_model_card(
            card_dir,
            title=f"pooltune {engine.value} model",
            data_summary=summarise(examples),
            scores=card_scores,
            best_sizes=np.array(
                [e.optimal_size for e in (test_set if scores else search.held_out[REAL].examples)],
                dtype=np.float64,
            ),
            model_names=[
                n for n in ("lightgbm", "sklearn-hgb", "heuristic", "default") if n in card_scores
            ],
            extra={k: v for k, v in summary.items() if k not in summarise(examples)},
            metrics=metrics,
        )
    return TrainOutcome(
        model=model,
        search=search,
        scores=scores,
        real=real,
        metrics=metrics,
        training_summary=summary,
        card_path=card_path,
    )


@dataclass
class GateDecision:
    accepted: bool
    reason: str
    candidate_regret: float
    current_regret: float | None
    best_baseline: str
    best_baseline_regret: float
    #: The candidate's real cross-validation regret and the engine default's (when the data
    #: holds real workloads).
    real_regret: float | None = None
    real_default_regret: float | None = None


#: Regret by which a candidate may trail a bar on real workloads and still pass: half a
#: percent of throughput, below what any real sweep resolves (their noise is 1-13 %), so a
#: model that answers the heuristic's size rounded the other way is not refused for it.
REAL_GATE_TOLERANCE = 0.005
#: The fallbacks a candidate must not be worse than on real held-out workloads: the engine
#: default, and the heuristic the service answers with while no model is promoted.
REAL_GATE_BARS = ("default", "heuristic")


def real_verdict(
    candidate_metrics: Mapping[str, Any] | None, examples: Sequence[Example]
) -> tuple[bool | None, str, float | None, float | None]:
    """Whether the candidate is no worse than the engine default and the heuristic on real
    held-out workloads (within :data:`REAL_GATE_TOLERANCE`), by the real cross-validation
    recorded in its metrics: (verdict — None when the data holds no real workload —, reason,
    its regret, the default's)."""
    if not any(e.is_real and e.curve is not None for e in examples):
        return None, "no real workload to judge on", None, None
    real = ((candidate_metrics or {}).get("heldout") or {}).get(REAL) or {}
    figures = {name: real.get(f"{name}_regret") for name in REAL_GATE_BARS}
    figures["candidate"] = real.get("regret")
    if not all(isinstance(value, int | float) for value in figures.values()):
        return False, "no real held-out figure in the candidate's metrics (retrain it)", None, None
    numbers = {name: float(value) for name, value in figures.items() if value is not None}
    regret, bars = numbers.pop("candidate"), numbers
    worse = [name for name, bar in bars.items() if regret > bar + REAL_GATE_TOLERANCE]
    against = ", ".join(f"the {name}'s {bar:.4f}" for name, bar in bars.items())
    verdict = f"worse than the {' and the '.join(worse)}" if worse else "no worse than either"
    return (
        not worse,
        f"real leave-one-workload-out regret {regret:.4f} vs {against}: {verdict}",
        regret,
        bars["default"],
    )


def promotion_gate(
    candidate: TupleModel,
    current: TupleModel | None,
    examples: Sequence[Example],
    *,
    test_fraction: float,
    seed: int,
    candidate_metrics: Mapping[str, Any] | None = None,
) -> GateDecision:
    """Score candidate, current and baselines on the same held-out simulated workloads and
    accept only a model whose mean regret is lower than both the current model's and the
    best baseline's; and, where the data holds real workloads, only one whose recorded real
    cross-validation regret is no worse than the engine default's and the heuristic's
    (:func:`real_verdict`)."""
    train_set, test_set = holdout_split(examples, test_fraction=test_fraction, seed=seed)
    real_ok, real_reason, real_regret, real_default = real_verdict(candidate_metrics, examples)
    simulated = any(e.curve is not None for e in test_set)
    if not simulated and real_ok is None:
        raise NotEnoughDataError("the evaluation set has no workload with a curve to score on")
    new, old = float("nan"), None
    baseline_name, baseline_regret = "", float("nan")
    accepted = real_ok is not False
    reasons = []
    if simulated:
        models = {"candidate": candidate} | ({"current": current} if current is not None else {})
        scores = evaluate(test=test_set, models=models, predictors=baseline_predictors(train_set))
        baseline = best_baseline(scores, BASELINES)
        new = scores["candidate"].regret.mean
        old = scores["current"].regret.mean if current is not None else None
        accepted = accepted and new < baseline.regret.mean and (old is None or new < old)
        baseline_name, baseline_regret = baseline.name, baseline.regret.mean
        current_text = "none" if old is None else f"{old:.4f}"
        reasons.append(
            f"mean regret {new:.4f} on {len(test_set)} held-out simulated examples vs "
            f"current {current_text}, best baseline {baseline.name} {baseline.regret.mean:.4f}"
        )
    if real_ok is not None:
        reasons.append(real_reason)
    return GateDecision(
        accepted=accepted,
        reason="; ".join(reasons),
        candidate_regret=new if simulated else float(real_regret or float("nan")),
        current_regret=old,
        best_baseline=baseline_name or "default",
        best_baseline_regret=baseline_regret if simulated else float(real_default or float("nan")),
        real_regret=real_regret,
        real_default_regret=real_default,
    )
