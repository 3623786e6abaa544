"""Score models and baselines the same way on the same held-out workloads.

For each predictor: throughput regret (median / p90 / mean) on the examples with a curve,
log2-size error on all of them, and, for predictors that give a range, its coverage (the share
of best sizes inside the range; nominal = the distance between the two quantiles).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from trainer import baselines
from trainer.artifact import TupleModel
from trainer.examples import Example
from trainer.models import predict_sizes
from trainer.regret import RegretSummary, log_size_error, regrets

SizePredictor = Callable[[Sequence[Example]], NDArray[np.float64]]


@dataclass
class Score:
    name: str
    regret: RegretSummary
    log_size_error: RegretSummary
    #: predicted / best size: thread economy (regret alone does not punish oversizing on a
    #: plateau, where every size past the knee gives the same throughput).
    size_ratio: RegretSummary | None = None
    coverage: float | None = None
    nominal_coverage: float | None = None
    predicted: NDArray[np.float64] = field(default_factory=lambda: np.empty(0), repr=False)
    regrets: NDArray[np.float64] = field(default_factory=lambda: np.empty(0), repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {
            "regret": self.regret.as_dict(),
            "log_size_error": self.log_size_error.as_dict(),
            "size_ratio": self.size_ratio.as_dict() if self.size_ratio else None,
            "coverage": self.coverage,
            "nominal_coverage": self.nominal_coverage,
        }


def score_sizes(name: str, examples: Sequence[Example], predicted: NDArray[np.float64]) -> Score:
    best = np.array([e.optimal_size for e in examples], dtype=np.float64)
    with_curve = [i for i, e in enumerate(examples) if e.curve is not None]
    curves = [examples[i].curve for i in with_curve]
    values = regrets([c for c in curves if c is not None], list(predicted[with_curve]))
    return Score(
        name=name,
        regret=RegretSummary.of(values),
        log_size_error=RegretSummary.of(log_size_error(predicted, best)),
        size_ratio=RegretSummary.of(predicted / np.clip(best, 1, None)) if len(best) else None,
        predicted=predicted,
        regrets=values,
    )


def score_tuple_model(name: str, model: TupleModel, examples: Sequence[Example]) -> Score:
    predicted, low, high = predict_sizes(model, examples)
    score = score_sizes(name, examples, predicted)
    best = np.array([e.optimal_size for e in examples], dtype=np.float64)
    if len(best):
        score.coverage = float(np.mean((best >= low) & (best <= high)))
    score.nominal_coverage = model.quantiles[1] - model.quantiles[0]
    return score


def baseline_predictors(train: Sequence[Example]) -> dict[str, SizePredictor]:
    nearest = baselines.NearestWorkload().fit(train)
    return {
        "default": baselines.default_sizes,
        "heuristic": baselines.heuristic_sizes,
        "little": baselines.little_sizes,
        "nearest": nearest.predict,
    }


def evaluate(
    *,
    test: Sequence[Example],
    models: Mapping[str, TupleModel] | None = None,
    predictors: Mapping[str, SizePredictor] | None = None,
) -> dict[str, Score]:
    """Scores of every model and size predictor on ``test``, by name."""
    scores: dict[str, Score] = {}
    for name, model in (models or {}).items():
        scores[name] = score_tuple_model(name, model, test)
    for name, predict in (predictors or {}).items():
        scores[name] = score_sizes(name, test, predict(test))
    return scores


def best_baseline(scores: Mapping[str, Score], baseline_names: Sequence[str]) -> Score:
    candidates = [scores[name] for name in baseline_names if name in scores]
    if not candidates:
        raise ValueError("no baseline was scored")
    return min(
        candidates, key=lambda s: (np.nan_to_num(s.regret.mean, nan=np.inf), s.log_size_error.mean)
    )
