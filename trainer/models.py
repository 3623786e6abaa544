"""The models: LightGBM tuned by an Optuna search, a scikit-learn alternative, quantile ranges.

Every model learns log2(optimal value) per knob from :mod:`trainer.features`. The search
minimises what matters, the mean throughput regret on a validation split (by workload group)
of the training data, and prunes unpromising trials on the validation L2 that LightGBM reports
every few boosting rounds. The plausible range the service returns comes from two LightGBM
quantile models (10% and 90% by default), so an 80% range should cover 80% of optima.

The study lives in an Optuna storage (the service's PostgreSQL in production) under a name
derived from the data, so an interrupted search resumes and several trainer processes can work
on one study: start them with the same ``--storage`` and data and different ``--worker``.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import lightgbm as lgb
import numpy as np
import optuna
from numpy.typing import NDArray
from sklearn.ensemble import HistGradientBoostingRegressor

from agents import knobs
from agents.knobs import Engine
from trainer.artifact import KnobModel, TupleModel
from trainer.examples import Example, split_by_group
from trainer.features import feature_matrix, size_offset, size_target
from trainer.regret import regrets

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SearchConfig:
    trials: int = 20
    seed: int = 0
    #: Offsets the sampler's seed so parallel workers on one study explore differently.
    worker: int = 0
    timeout_s: float | None = None
    #: An Optuna storage URL (``postgresql+psycopg://…``); None keeps the study in memory.
    storage_url: str | None = None
    study_prefix: str = "pooltune"
    quantiles: tuple[float, float] = (0.1, 0.9)
    validation_fraction: float = 0.2
    max_boost_rounds: int = 600
    early_stopping_rounds: int = 40
    #: Called after each trial with (finished trials, best value): progress bars hook in here.
    on_trial: Callable[[int, float], None] | None = field(default=None, compare=False)


def matrix_of(examples: Sequence[Example]) -> NDArray[np.float64]:
    return feature_matrix((e.host, e.profile) for e in examples)


def clip_sizes(examples: Sequence[Example], log2_sizes: NDArray[np.float64]) -> NDArray[np.float64]:
    """Round and clip predicted pool sizes to the catalog and the connection count."""
    sizes = np.rint(np.exp2(log2_sizes))
    out = np.empty_like(sizes)
    for i, example in enumerate(examples):
        knob = knobs.knob(example.engine, knobs.POOL_SIZE_KNOB[example.engine])
        upper = float(knob.maximum)
        if example.profile.connections > 0:
            upper = min(upper, float(example.profile.connections))
        out[i] = min(max(sizes[i], knob.minimum), max(upper, knob.minimum))
    return out


def size_residuals(examples: Sequence[Example], matrix: NDArray[np.float64]) -> NDArray[np.float64]:
    """What size models learn: log2(optimal size) − :func:`size_offset`."""
    best = np.array([size_target(e.optimal_size) for e in examples], dtype=np.float64)
    return best - size_offset(matrix)


def data_fingerprint(examples: Sequence[Example]) -> str:
    digest = hashlib.sha256()
    for example in sorted(examples, key=lambda e: (e.group, e.origin)):
        digest.update(f"{example.group}|{example.origin}|{example.optimal_size}\n".encode())
    return digest.hexdigest()[:12]


#: What the point prediction estimates. Regret is asymmetric — one size too few on a rising
#: flank costs more than one too many on a plateau — so an upper quantile of the optimum can
#: give less regret than its mean; the search picks whichever scores best.
POINT_OBJECTIVES = ("l2", "q50", "q60", "q70")


def point_objective(choice: str) -> dict[str, Any]:
    if choice == "l2":
        return {"objective": "regression", "metric": "l2"}
    if choice.startswith("q") and choice[1:].isdigit():
        # The pruner compares validation L2 across trials whatever the objective.
        return {"objective": "quantile", "alpha": int(choice[1:]) / 100, "metric": "l2"}
    raise ValueError(f"unknown point objective {choice!r}; choose from {POINT_OBJECTIVES}")


def _base_params(seed: int) -> dict[str, Any]:
    return {
        "objective": "regression",
        "metric": "l2",
        "verbosity": -1,
        "seed": seed,
        "deterministic": True,
        "force_row_wise": True,
        "num_threads": 1,
    }


class _PruneOnL2:
    """Report the validation L2 to Optuna every few rounds and stop a trial it prunes."""

    def __init__(self, trial: optuna.Trial, every: int = 10) -> None:
        self.trial = trial
        self.every = every

    def __call__(self, env: lgb.callback.CallbackEnv) -> None:
        if env.iteration % self.every or not env.evaluation_result_list:
            return
        _, _, value, _ = env.evaluation_result_list[0][:4]
        self.trial.report(float(value), step=env.iteration)
        if self.trial.should_prune():
            raise optuna.TrialPruned(f"pruned at round {env.iteration} (l2 {value:.4f})")


class LightGBMObjective:
    """Optuna objective: mean validation regret of a LightGBM size model (data pre-split)."""

    def __init__(
        self,
        *,
        fit_examples: Sequence[Example],
        valid_examples: Sequence[Example],
        config: SearchConfig,
    ) -> None:
        self.fit_matrix = matrix_of(fit_examples)
        self.fit_target = size_residuals(fit_examples, self.fit_matrix)
        self.valid_examples = list(valid_examples)
        self.valid_matrix = matrix_of(valid_examples)
        self.valid_offset = size_offset(self.valid_matrix)
        self.valid_target = size_residuals(valid_examples, self.valid_matrix)
        self.config = config
        self.scored = [i for i, e in enumerate(valid_examples) if e.curve is not None]

    def __call__(self, trial: optuna.Trial) -> float:
        params = (
            _base_params(self.config.seed)
            | {
                "learning_rate": trial.suggest_float("learning_rate", 0.02, 0.3, log=True),
                "num_leaves": trial.suggest_int("num_leaves", 7, 127, log=True),
                "min_data_in_leaf": trial.suggest_int("min_data_in_leaf", 5, 200, log=True),
                "feature_fraction": trial.suggest_float("feature_fraction", 0.4, 1.0),
                "bagging_fraction": trial.suggest_float("bagging_fraction", 0.5, 1.0),
                "bagging_freq": 1,
                "lambda_l2": trial.suggest_float("lambda_l2", 1e-3, 10.0, log=True),
            }
            | point_objective(trial.suggest_categorical("point_objective", POINT_OBJECTIVES))
        )
        train_set = lgb.Dataset(self.fit_matrix, self.fit_target, free_raw_data=False)
        valid_set = lgb.Dataset(self.valid_matrix, self.valid_target, reference=train_set)
        booster = lgb.train(
            params,
            train_set,
            num_boost_round=self.config.max_boost_rounds,
            valid_sets=[valid_set],
            callbacks=[
                lgb.early_stopping(self.config.early_stopping_rounds, verbose=False),
                _PruneOnL2(trial),
            ],
        )
        trial.set_user_attr(
            "best_iteration", int(booster.best_iteration or booster.current_iteration())
        )
        predicted = np.asarray(
            booster.predict(self.valid_matrix, num_iteration=booster.best_iteration)
        )
        if not self.scored:
            # No curves to score against: the log-size error is the honest fallback.
            return float(np.mean(np.abs(predicted - self.valid_offset - self.valid_target)))
        valid = [self.valid_examples[i] for i in self.scored]
        sizes = clip_sizes(valid, predicted[self.scored])
        return float(np.mean(regrets([e.curve for e in valid if e.curve is not None], list(sizes))))


@dataclass
class SearchResult:
    model: TupleModel
    best_params: dict[str, Any]
    best_value: float
    trials: int
    study_name: str


def _fit_knob(
    matrix: NDArray[np.float64],
    target: NDArray[np.float64],
    params: dict[str, Any],
    rounds: int,
    quantiles: tuple[float, float],
    *,
    offset: bool,
) -> KnobModel:
    if np.ptp(target) == 0:
        return KnobModel(median=None, low=None, high=None, constant=float(target[0]), offset=offset)
    data = lgb.Dataset(matrix, target)
    median = lgb.train(params, data, num_boost_round=rounds)
    quantile = params | {"metric": "quantile", "objective": "quantile"}
    bounds = [lgb.train(quantile | {"alpha": q}, data, num_boost_round=rounds) for q in quantiles]
    return KnobModel(median=median, low=bounds[0], high=bounds[1], offset=offset)


def search_lightgbm(
    engine: Engine, examples: Sequence[Example], config: SearchConfig
) -> SearchResult:
    """Tune LightGBM with Optuna on a group split of ``examples``, then refit on all of them."""
    fit_examples, valid_examples = split_by_group(
        examples, test_fraction=config.validation_fraction, seed=config.seed + 1
    )
    if not fit_examples or not valid_examples:
        raise ValueError("too few workload groups to hold some out for validation")
    objective = LightGBMObjective(
        fit_examples=fit_examples, valid_examples=valid_examples, config=config
    )
    study_name = f"{config.study_prefix}-{engine.value}-{data_fingerprint(examples)}"
    study = optuna.create_study(
        study_name=study_name,
        storage=config.storage_url,
        load_if_exists=True,
        direction="minimize",
        sampler=optuna.samplers.TPESampler(seed=config.seed + 7919 * config.worker),
        pruner=optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=30),
    )
    callbacks = []
    if config.on_trial is not None:
        on_trial = config.on_trial

        def report(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
            done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
            on_trial(len(study.trials), study.best_value if done else float("nan"))

        callbacks.append(report)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study.optimize(objective, n_trials=config.trials, timeout=config.timeout_s, callbacks=callbacks)
    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    if not complete:
        raise RuntimeError(f"no trial of study {study_name!r} completed")
    best = study.best_trial
    searched = {k: v for k, v in best.params.items() if k != "point_objective"}
    params = _base_params(config.seed) | searched | {"bagging_freq": 1}
    params |= point_objective(str(best.params.get("point_objective", "l2")))
    rounds = max(10, int(best.user_attrs.get("best_iteration", 100)))
    model = fit_tuple_model(
        engine, examples, params=params, rounds=rounds, quantiles=config.quantiles
    )
    return SearchResult(
        model=model,
        best_params=best.params,
        best_value=float(best.value if best.value is not None else float("nan")),
        trials=len(study.trials),
        study_name=study_name,
    )


def fit_tuple_model(
    engine: Engine,
    examples: Sequence[Example],
    *,
    params: dict[str, Any],
    rounds: int,
    quantiles: tuple[float, float],
) -> TupleModel:
    """Fit median + quantile boosters for every tuned knob the examples carry."""
    matrix = matrix_of(examples)
    size_name = knobs.POOL_SIZE_KNOB[engine]
    knob_models = {}
    for knob in knobs.tuned_knobs(engine):
        having = [i for i, e in enumerate(examples) if knob.name in e.optimal_tuple]
        if not having:
            continue
        target = np.array([size_target(examples[i].optimal_tuple[knob.name]) for i in having])
        offset = knob.name == size_name
        if offset:
            target = target - size_offset(matrix[having])
        knob_models[knob.name] = _fit_knob(
            matrix[having], target, params, rounds, quantiles, offset=offset
        )
    return TupleModel(engine=engine, knob_models=knob_models, quantiles=quantiles)


class SklearnSizeModel:
    """The scikit-learn alternative: histogram gradient boosting on log2(size)."""

    name = "sklearn-hgb"

    def __init__(self, *, seed: int = 0, max_iter: int = 300) -> None:
        self.seed = seed
        self.max_iter = max_iter

    def fit(self, examples: Sequence[Example]) -> SklearnSizeModel:
        matrix = matrix_of(examples)
        target = size_residuals(examples, matrix)
        # Columns that are never measured carry nothing, and the binner cannot bin them.
        self.columns_ = np.flatnonzero(~np.isnan(matrix).all(axis=0))
        self.model_ = HistGradientBoostingRegressor(
            max_iter=self.max_iter, random_state=self.seed, early_stopping=False
        ).fit(matrix[:, self.columns_], target)
        return self

    def predict(self, examples: Sequence[Example]) -> NDArray[np.float64]:
        matrix = matrix_of(examples)
        residual = np.asarray(self.model_.predict(matrix[:, self.columns_]))
        return clip_sizes(examples, size_offset(matrix) + residual)


def predict_sizes(
    model: TupleModel, examples: Sequence[Example]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(size, low, high) for each example from a :class:`TupleModel`."""
    if not examples:
        empty = np.empty(0)
        return empty, empty, empty
    size_name = knobs.POOL_SIZE_KNOB[model.engine]
    connections = np.array([e.profile.connections for e in examples], dtype=np.float64)
    answers = model.predict_matrix(matrix_of(examples), connections=connections)
    value, low, high = answers[size_name]
    return value.astype(np.float64), low.astype(np.float64), high.astype(np.float64)
