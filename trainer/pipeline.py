"""Training, evaluation and the promotion gate as plain functions over examples.

The CLI parses and delegates here; tests call these directly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.knobs import Engine
from trainer.artifact import TupleModel
from trainer.card import write_model_card
from trainer.evaluation import Score, baseline_predictors, best_baseline, evaluate
from trainer.examples import Example, groups, split_by_group
from trainer.models import (
    SearchConfig,
    SearchResult,
    SklearnSizeModel,
    data_fingerprint,
    search_lightgbm,
)

BASELINES = ("default", "heuristic", "little", "nearest")
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
    metrics: dict[str, Any]
    training_summary: dict[str, Any]
    card_path: Path | None


def check_enough(examples: Sequence[Example], *, engine: Engine) -> None:
    found = len(groups(examples))
    if found < MIN_GROUPS:
        raise NotEnoughDataError(
            f"{found} workload groups for {engine.value}; training needs at least {MIN_GROUPS} "
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


def score_metrics(scores: dict[str, Score], model_name: str) -> dict[str, Any]:
    """The registry's metrics: ``regret`` (mean, lower is better) is what the service gates on."""
    model = scores[model_name]
    baseline = best_baseline(scores, BASELINES)
    return {
        "regret": model.regret.mean,
        "regret_median": model.regret.median,
        "regret_p90": model.regret.p90,
        "log_size_error_median": model.log_size_error.median,
        "coverage": model.coverage,
        "nominal_coverage": model.nominal_coverage,
        "best_baseline": baseline.name,
        "best_baseline_regret": baseline.regret.mean,
        "scores": {name: score.as_dict() for name, score in scores.items()},
    }


def train(
    examples: Sequence[Example],
    *,
    engine: Engine,
    config: SearchConfig,
    test_fraction: float = 0.2,
    card_dir: Path | None = None,
    on_stage: Callable[[str], None] | None = None,
) -> TrainOutcome:
    """Search, fit, and score against the baselines on held-out workload groups."""
    stage = on_stage or (lambda _stage: None)
    check_enough(examples, engine=engine)
    train_set, test_set = split_by_group(examples, test_fraction=test_fraction, seed=config.seed)
    stage("searching LightGBM hyper-parameters")
    search = search_lightgbm(engine, train_set, config)
    stage("fitting the scikit-learn alternative and the baselines")
    alternative = SklearnSizeModel(seed=config.seed).fit(train_set)
    scores = evaluate(
        test=test_set,
        models={"lightgbm": search.model},
        predictors=baseline_predictors(train_set) | {"sklearn-hgb": alternative.predict},
    )
    metrics = score_metrics(scores, "lightgbm")
    summary = summarise(examples) | {
        "train_examples": len(train_set),
        "test_examples": len(test_set),
        "test_fingerprint": data_fingerprint(test_set),
        "split_seed": config.seed,
        "test_fraction": test_fraction,
        "study": search.study_name,
        "trials": search.trials,
        "best_params": search.best_params,
    }
    card_path = None
    if card_dir is not None:
        stage("writing the model card")
        card_path = write_model_card(
            card_dir,
            title=f"pooltune {engine.value} model",
            data_summary=summarise(examples),
            scores=scores,
            best_sizes=np.array([e.optimal_size for e in test_set], dtype=np.float64),
            model_names=["lightgbm", "sklearn-hgb", "heuristic", "default"],
            extra={k: v for k, v in summary.items() if k not in summarise(examples)},
        )
    return TrainOutcome(
        model=search.model,
        search=search,
        scores=scores,
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


def promotion_gate(
    candidate: TupleModel,
    current: TupleModel | None,
    examples: Sequence[Example],
    *,
    test_fraction: float,
    seed: int,
) -> GateDecision:
    """Score candidate, current and baselines on the same evaluation set; accept only a model
    whose mean regret is lower than both the current model's and the best baseline's."""
    train_set, test_set = split_by_group(examples, test_fraction=test_fraction, seed=seed)
    if not any(e.curve is not None for e in test_set):
        raise NotEnoughDataError("the evaluation set has no workload with a curve to score on")
    models = {"candidate": candidate} | ({"current": current} if current is not None else {})
    scores = evaluate(test=test_set, models=models, predictors=baseline_predictors(train_set))
    baseline = best_baseline(scores, BASELINES)
    new = scores["candidate"].regret.mean
    old = scores["current"].regret.mean if current is not None else None
    beats_baseline = new < baseline.regret.mean
    beats_current = old is None or new < old
    accepted = beats_baseline and beats_current
    current_text = "none" if old is None else f"{old:.4f}"
    reason = (
        f"mean regret {new:.4f} on {len(test_set)} held-out examples vs "
        f"current {current_text}, best baseline "
        f"{baseline.name} {baseline.regret.mean:.4f}"
    )
    return GateDecision(
        accepted=accepted,
        reason=reason,
        candidate_regret=new,
        current_regret=old,
        best_baseline=baseline.name,
        best_baseline_regret=baseline.regret.mean,
    )
