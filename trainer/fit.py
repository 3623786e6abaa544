"""Fit the models of a tuple model from a :class:`Recipe`: the pool size's point and quantile
boosters, the secondary knobs (their best value and the gain it brings), and the
scikit-learn alternative. Real examples are weighted or fine-tuned on
(:mod:`trainer.weighting`); calibration, novelty and the throughput curve are added by
:mod:`trainer.model`.

Every knob's model learns log2 of its best value; the pool size learns the residual over
``size_offset`` with the recipe's :class:`~trainer.objective.PointObjective`
(docs/trainer.md, "Models").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import lightgbm as lgb
import numpy as np
from numpy.typing import NDArray
from sklearn.ensemble import HistGradientBoostingRegressor

from agents import knobs
from agents.knobs import Engine, Knob
from service.recommendations.tuple_model import NO_SPREAD, KnobModel
from service.recommendations.workload_features import size_offset
from trainer.examples import Example
from trainer.features import clip_sizes, matrix_of, size_residuals, size_target
from trainer.objective import PointObjective, RegretObjective, RegretTable, regret_eval
from trainer.weighting import DEFAULT_REAL_SHARE, DomainWeighting, sample_weights

#: The calibration a model carries until :mod:`trainer.uncertainty` fits the real one.
UNCALIBRATED = NO_SPREAD
#: Fewer examples than this where a secondary knob matters: keep its default.
MIN_SECONDARY_EXAMPLES = 20


def base_params(seed: int) -> dict[str, Any]:
    """LightGBM parameters every fit shares: seeded, deterministic, one thread."""
    return {
        "objective": "regression",
        # Early stopping and pruning watch the validation regret (feval), not a built-in metric.
        "metric": "None",
        "verbosity": -1,
        "seed": seed,
        "deterministic": True,
        "force_row_wise": True,
        "num_threads": 1,
    }


@dataclass(frozen=True)
class Recipe:
    """How to fit a tuple model: LightGBM parameters and rounds (the search's best trial),
    the pool size's point objective, the range's quantiles, how real examples count and the
    gain below which a secondary knob keeps its default."""

    params: dict[str, Any]
    rounds: int
    point: PointObjective = field(default_factory=PointObjective)
    quantiles: tuple[float, float] = (0.1, 0.9)
    weighting: DomainWeighting = field(default_factory=DomainWeighting)
    secondary_min_gain: float = 0.05

    def weights(self, examples: Sequence[Example]) -> NDArray[np.float64]:
        """Sample weights of every model (with ``finetune``, all but the size's point
        model, which boosts on the real examples apart)."""
        return sample_weights(examples, real_share=self.weighting.real_share)


@dataclass
class PointFit:
    """A trained point model: booster plus the constant its scores start from."""

    booster: lgb.Booster
    init: float
    best_iteration: int


def _regret_objective(
    examples: Sequence[Example],
    *,
    offset: NDArray[np.float64],
    economical: NDArray[np.float64],
    point: PointObjective,
    weights: NDArray[np.float64] | None,
) -> RegretObjective:
    return RegretObjective(
        RegretTable(examples),
        offset=offset,
        economical=economical,
        pull=point.pull,
        damping=point.damping,
        weights=weights,
    )


def fit_point_model(
    params: dict[str, Any],
    *,
    point: PointObjective,
    rounds: int,
    fit: tuple[NDArray[np.float64], Sequence[Example]],
    valid: tuple[NDArray[np.float64], Sequence[Example]] | None = None,
    callbacks: Sequence[Callable[[lgb.callback.CallbackEnv], None]] = (),
    early_stopping_rounds: int | None = None,
    weights: NDArray[np.float64] | None = None,
    valid_weights: NDArray[np.float64] | None = None,
) -> PointFit:
    """Fit the size model's point booster; with ``valid``, watch its (weighted) regret."""
    matrix, examples = fit
    offset = size_offset(matrix)
    economical = size_residuals(examples, matrix)
    init = float(np.median(economical)) if point.centred else 0.0
    train_params = params | point.booster_params()
    if point.kind == "regret":
        train_params["objective"] = _regret_objective(
            examples, offset=offset, economical=economical, point=point, weights=weights
        )
    train_set = lgb.Dataset(
        matrix, economical, weight=weights, init_score=np.full(len(examples), init)
    )
    valid_sets: list[lgb.Dataset] = []
    feval = None
    all_callbacks = list(callbacks)
    if valid is not None:
        valid_matrix, valid_examples = valid
        valid_offset = size_offset(valid_matrix)
        valid_economical = size_residuals(valid_examples, valid_matrix)
        valid_sets.append(
            lgb.Dataset(
                valid_matrix,
                valid_economical,
                init_score=np.full(len(valid_examples), init),
                reference=train_set,
            )
        )
        feval = regret_eval(
            RegretTable(valid_examples), valid_offset, valid_economical, valid_weights
        )
        if early_stopping_rounds:
            all_callbacks.insert(0, lgb.early_stopping(early_stopping_rounds, verbose=False))
    booster = lgb.train(
        train_params,
        train_set,
        num_boost_round=rounds,
        valid_sets=valid_sets,
        feval=feval,
        callbacks=all_callbacks,
    )
    best = int(booster.best_iteration or booster.current_iteration())
    return PointFit(booster=booster, init=init, best_iteration=best)


def finetune_point_model(
    base: PointFit, recipe: Recipe, matrix: NDArray[np.float64], examples: Sequence[Example]
) -> PointFit:
    """Boost ``base`` (fitted on simulated examples) a few more rounds on real ``examples``
    alone, small trees at a low rate. LightGBM starts the new rounds from the base's raw
    scores, without its ``init`` constant, so the targets are shifted by it."""
    offset = size_offset(matrix) + base.init
    economical = size_residuals(examples, matrix) - base.init
    weighting = recipe.weighting
    params = recipe.params | recipe.point.booster_params()
    params |= {
        "learning_rate": weighting.finetune_learning_rate,
        "num_leaves": 4,
        "min_data_in_leaf": 2,
        "min_sum_hessian_in_leaf": 1e-3,
        "feature_pre_filter": False,
        "bagging_fraction": 1.0,
    }
    if recipe.point.kind == "regret":
        params["objective"] = _regret_objective(
            examples, offset=offset, economical=economical, point=recipe.point, weights=None
        )
    booster = lgb.train(
        params,
        lgb.Dataset(matrix, economical, params={"feature_pre_filter": False}),
        num_boost_round=weighting.finetune_rounds,
        init_model=base.booster,
    )
    return PointFit(booster=booster, init=base.init, best_iteration=booster.current_iteration())


def fit_size_point(
    recipe: Recipe, matrix: NDArray[np.float64], examples: Sequence[Example]
) -> PointFit:
    """The pool size's point model as the recipe's weighting says."""
    real = np.array([e.is_real for e in examples], dtype=bool)
    if recipe.weighting.kind == "finetune" and real.any() and (~real).any():
        simulated_rows = np.flatnonzero(~real)
        base = fit_point_model(
            recipe.params,
            point=recipe.point,
            rounds=recipe.rounds,
            fit=(matrix[simulated_rows], [examples[int(i)] for i in simulated_rows]),
        )
        real_rows = np.flatnonzero(real)
        return finetune_point_model(
            base, recipe, matrix[real_rows], [examples[int(i)] for i in real_rows]
        )
    return fit_point_model(
        recipe.params,
        point=recipe.point,
        rounds=recipe.rounds,
        fit=(matrix, examples),
        weights=recipe.weights(examples),
    )


def fit_quantiles(
    matrix: NDArray[np.float64],
    target: NDArray[np.float64],
    recipe: Recipe,
    weights: NDArray[np.float64] | None = None,
) -> tuple[lgb.Booster, lgb.Booster]:
    """The low and high quantile boosters of ``target``."""
    quantile = recipe.params | {"objective": "quantile", "metric": "None"}
    low, high = (
        lgb.train(
            quantile | {"alpha": q},
            lgb.Dataset(matrix, target, weight=weights),
            num_boost_round=recipe.rounds,
        )
        for q in recipe.quantiles
    )
    return low, high


def secondary_gain(example: Example, knob: Knob) -> float | None:
    """log(throughput at the example's best value of ``knob`` / at its default), read off
    the knob's curve; None without a curve or a best value."""
    curve = example.knob_curves.get(knob.name)
    best = example.optimal_tuple.get(knob.name)
    if curve is None or best is None or curve.peak <= 0:
        return None
    at_best, at_default = curve.at([best, knob.default_for(example.host.cpu_count)])
    if at_default <= 0:
        return None
    return float(math.log(max(at_best, 1e-12) / at_default))


def fit_secondary(
    knob: Knob, examples: Sequence[Example], recipe: Recipe, weights: NDArray[np.float64]
) -> KnobModel:
    """A secondary knob: a booster of the gain its best value brings over the default, and
    one of that best value trained where the gain passes the recipe's noise threshold; the
    default alone where too few examples say it matters."""
    default_log2 = size_target(knob.default_for(1))
    gains = [secondary_gain(e, knob) for e in examples]
    known = [i for i, g in enumerate(gains) if g is not None]
    threshold = math.log1p(recipe.secondary_min_gain)
    matters = [i for i in known if (gains[i] or 0.0) > threshold]
    if len(matters) < MIN_SECONDARY_EXAMPLES:
        return KnobModel(None, None, None, constant=default_log2, calibration=UNCALIBRATED)
    known_matrix = matrix_of([examples[i] for i in known])
    gain_booster = lgb.train(
        recipe.params,
        lgb.Dataset(
            known_matrix,
            np.array([max(gains[i] or 0.0, 0.0) for i in known]),
            weight=weights[known],
        ),
        num_boost_round=recipe.rounds,
    )
    best = np.array([size_target(examples[i].optimal_tuple[knob.name]) for i in matters])
    value_booster = lgb.train(
        recipe.params,
        lgb.Dataset(matrix_of([examples[i] for i in matters]), best, weight=weights[matters]),
        num_boost_round=recipe.rounds,
    )
    return KnobModel(
        median=value_booster,
        low=None,
        high=None,
        calibration=UNCALIBRATED,
        gain=gain_booster,
        min_gain=recipe.secondary_min_gain,
        choices=tuple(sorted({examples[i].optimal_tuple[knob.name] for i in matters})),
    )


def fit_size(
    knob: Knob, examples: Sequence[Example], recipe: Recipe, weights: NDArray[np.float64]
) -> KnobModel:
    """The pool size: point booster (weighted or fine-tuned) and the quantile boosters that
    give its range's local width."""
    matrix = matrix_of(examples)
    target = size_residuals(examples, matrix)
    if np.ptp(target) == 0:
        return KnobModel(
            None, None, None, constant=float(target[0]), offset=True, calibration=UNCALIBRATED
        )
    fitted = fit_size_point(recipe, matrix, examples)
    low, high = fit_quantiles(matrix, target, recipe, weights)
    return KnobModel(
        median=fitted.booster,
        low=low,
        high=high,
        offset=True,
        init=fitted.init,
        calibration=UNCALIBRATED,
    )


def fit_knob_models(
    engine: Engine,
    examples: Sequence[Example],
    recipe: Recipe,
    *,
    secondary: bool = True,
) -> dict[str, KnobModel]:
    """Every tuned knob's model (uncalibrated); ``secondary=False`` fits the pool size only
    (cross-validation folds score the size)."""
    size_name = knobs.POOL_SIZE_KNOB[engine]
    weights = recipe.weights(examples)
    knob_models = {}
    for knob in knobs.tuned_knobs(engine):
        if knob.name == size_name:
            knob_models[knob.name] = fit_size(knob, examples, recipe, weights)
        elif secondary:
            knob_models[knob.name] = fit_secondary(knob, examples, recipe, weights)
    return knob_models


class SklearnSizeModel:
    """The scikit-learn alternative: histogram gradient boosting on log2(size)."""

    name = "sklearn-hgb"

    def __init__(
        self, *, seed: int = 0, max_iter: int = 300, real_share: float = DEFAULT_REAL_SHARE
    ) -> None:
        self.seed = seed
        self.max_iter = max_iter
        self.real_share = real_share

    def fit(self, examples: Sequence[Example]) -> SklearnSizeModel:
        matrix = matrix_of(examples)
        target = size_residuals(examples, matrix)
        # Columns that are never measured carry nothing, and the binner cannot bin them.
        self.columns_ = np.flatnonzero(~np.isnan(matrix).all(axis=0))
        self.model_ = HistGradientBoostingRegressor(
            max_iter=self.max_iter, random_state=self.seed, early_stopping=False
        ).fit(
            matrix[:, self.columns_],
            target,
            sample_weight=sample_weights(examples, real_share=self.real_share),
        )
        return self

    def predict(self, examples: Sequence[Example]) -> NDArray[np.float64]:
        matrix = matrix_of(examples)
        residual = np.asarray(self.model_.predict(matrix[:, self.columns_]))
        return clip_sizes(examples, size_offset(matrix) + residual)
