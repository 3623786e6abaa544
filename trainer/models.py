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
from trainer.examples import Example, split_by_group, with_some_unmeasured
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


#: PostgreSQL schema that holds Optuna's tables, apart from the service's own (both use
#: Alembic, and each must keep its own ``alembic_version``).
OPTUNA_SCHEMA = "optuna"


def optuna_storage(url: str) -> optuna.storages.BaseStorage:
    """Optuna's RDB storage on ``url``; on PostgreSQL in its own schema."""
    if not url.startswith("postgresql"):
        return optuna.storages.RDBStorage(url)
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(text(f"CREATE SCHEMA IF NOT EXISTS {OPTUNA_SCHEMA}"))
    finally:
        engine.dispose()
    return optuna.storages.RDBStorage(
        url,
        engine_kwargs={
            "connect_args": {"options": f"-c search_path={OPTUNA_SCHEMA}"},
            "pool_pre_ping": True,
        },
    )


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


#: log2 pool sizes on which each training curve's regret is tabulated (sizes 1 to 128).
LOG2_GRID = np.linspace(0.0, 7.0, 141)
_GRID_STEP = float(LOG2_GRID[1] - LOG2_GRID[0])

#: What the point prediction estimates. ``regret`` minimises the metric that matters directly
#: (see :class:`RegretObjective`); the others estimate the economical optimum's mean or an
#: upper quantile of it (regret is asymmetric: one size too few on a rising flank costs more
#: than one too many on a plateau). The search picks whichever scores best on validation.
POINT_OBJECTIVES = ("regret", "l2", "q70")


class RegretTable:
    """Each example's regret at every size of :data:`LOG2_GRID` (sizes above the connection
    count read as the connection count, as predictions are clipped there)."""

    def __init__(self, examples: Sequence[Example]) -> None:
        self.values = np.zeros((len(examples), LOG2_GRID.size))
        self.has_curve = np.zeros(len(examples), dtype=bool)
        sizes = np.exp2(LOG2_GRID)
        for i, example in enumerate(examples):
            if example.curve is None or example.curve.peak <= 0:
                continue
            cap = example.profile.connections if example.profile.connections > 0 else sizes[-1]
            reached = example.curve.at(np.minimum(sizes, max(cap, 1)))
            self.values[i] = 1.0 - reached / example.curve.peak
            self.has_curve[i] = True

    def _locate(
        self, log2_sizes: NDArray[np.float64]
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        z = np.clip(log2_sizes, LOG2_GRID[0], LOG2_GRID[-1])
        index = np.clip(((z - LOG2_GRID[0]) / _GRID_STEP).astype(np.int64), 0, LOG2_GRID.size - 2)
        return index, (z - LOG2_GRID[index]) / _GRID_STEP

    def regret(self, log2_sizes: NDArray[np.float64]) -> NDArray[np.float64]:
        index, frac = self._locate(log2_sizes)
        rows = np.arange(index.size)
        low, high = self.values[rows, index], self.values[rows, index + 1]
        return np.asarray(low + frac * (high - low), dtype=np.float64)

    def slope(self, log2_sizes: NDArray[np.float64]) -> NDArray[np.float64]:
        index, _ = self._locate(log2_sizes)
        rows = np.arange(index.size)
        return np.asarray(
            (self.values[rows, index + 1] - self.values[rows, index]) / _GRID_STEP,
            dtype=np.float64,
        )


class RegretObjective:
    """LightGBM objective: regret at the predicted size, plus a small pull towards the
    economical optimum (which breaks the tie on a plateau, where every size past the knee has
    the same regret, in favour of fewer threads). Examples without a curve get plain L2.

    Scores are residuals over :func:`trainer.features.size_offset`; regret is not convex, so
    the Hessian is a constant (a damped gradient step)."""

    def __init__(
        self,
        table: RegretTable,
        *,
        offset: NDArray[np.float64],
        economical: NDArray[np.float64],
        pull: float,
        damping: float,
    ) -> None:
        self.table = table
        self.offset = offset
        self.economical = economical
        self.weight = np.where(table.has_curve, pull, 1.0)
        self.hessian = np.where(table.has_curve, damping, 0.0) + 2.0 * self.weight

    def __call__(
        self, preds: NDArray[np.float64], _data: lgb.Dataset
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        slope = np.where(self.table.has_curve, self.table.slope(self.offset + preds), 0.0)
        gradient = slope + 2.0 * self.weight * (preds - self.economical)
        return gradient, self.hessian


def point_objective(choice: str) -> dict[str, Any]:
    if choice in ("l2", "regret"):
        # "regret" replaces the objective with a RegretObjective built from the data.
        return {"objective": "regression"}
    if choice.startswith("q") and choice[1:].isdigit():
        return {"objective": "quantile", "alpha": int(choice[1:]) / 100}
    raise ValueError(f"unknown point objective {choice!r}; choose from {POINT_OBJECTIVES}")


def _base_params(seed: int) -> dict[str, Any]:
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


def regret_eval(
    table: RegretTable, offset: NDArray[np.float64], economical: NDArray[np.float64]
) -> Callable[[NDArray[np.float64], lgb.Dataset], tuple[str, float, bool]]:
    """A LightGBM feval: mean regret of the scores (L2 to the optimum where no curve)."""

    def evaluate(preds: NDArray[np.float64], _data: lgb.Dataset) -> tuple[str, float, bool]:
        regret = table.regret(offset + preds)
        l2 = (preds - economical) ** 2
        return "regret", float(np.mean(np.where(table.has_curve, regret, l2))), False

    return evaluate


class _Prune:
    """Report the validation regret to Optuna every few rounds; stop a trial it prunes."""

    def __init__(self, trial: optuna.Trial, every: int = 10) -> None:
        self.trial = trial
        self.every = every

    def __call__(self, env: lgb.callback.CallbackEnv) -> None:
        if env.iteration % self.every or not env.evaluation_result_list:
            return
        _, _, value, _ = env.evaluation_result_list[0][:4]
        self.trial.report(float(value), step=env.iteration)
        if self.trial.should_prune():
            raise optuna.TrialPruned(f"pruned at round {env.iteration} (regret {value:.4f})")


@dataclass
class PointFit:
    """A trained point model: booster plus the constant its scores start from."""

    booster: lgb.Booster
    init: float
    best_iteration: int


def fit_point_model(
    params: dict[str, Any],
    *,
    choice: str,
    pull: float,
    damping: float,
    rounds: int,
    fit: tuple[NDArray[np.float64], Sequence[Example]],
    valid: tuple[NDArray[np.float64], Sequence[Example]] | None = None,
    callbacks: Sequence[Callable[[lgb.callback.CallbackEnv], None]] = (),
    early_stopping_rounds: int | None = None,
) -> PointFit:
    """Fit the size model's point booster with the chosen objective."""
    matrix, examples = fit
    offset = size_offset(matrix)
    economical = size_residuals(examples, matrix)
    init = float(np.median(economical))
    train_params = params | point_objective(choice)
    if choice == "regret":
        train_params["objective"] = RegretObjective(
            RegretTable(examples), offset=offset, economical=economical, pull=pull, damping=damping
        )
    train_set = lgb.Dataset(matrix, economical, init_score=np.full(len(examples), init))
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
        feval = regret_eval(RegretTable(valid_examples), valid_offset, valid_economical)
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


class LightGBMObjective:
    """Optuna objective: mean validation regret of a LightGBM size model (data pre-split)."""

    def __init__(
        self,
        *,
        fit_examples: Sequence[Example],
        valid_examples: Sequence[Example],
        config: SearchConfig,
    ) -> None:
        self.fit_examples = list(fit_examples)
        self.fit_matrix = matrix_of(fit_examples)
        self.valid_examples = list(valid_examples)
        self.valid_matrix = matrix_of(valid_examples)
        self.config = config
        self.scored = [i for i, e in enumerate(valid_examples) if e.curve is not None]

    def __call__(self, trial: optuna.Trial) -> float:
        params = _base_params(self.config.seed) | {
            "learning_rate": trial.suggest_float("learning_rate", 0.02, 0.3, log=True),
            "num_leaves": trial.suggest_int("num_leaves", 7, 127, log=True),
            # LightGBM cannot split at all when a leaf needs more than half the rows.
            "min_data_in_leaf": trial.suggest_int(
                "min_data_in_leaf", 2, max(2, min(200, len(self.fit_examples) // 4)), log=True
            ),
            "feature_fraction": trial.suggest_float("feature_fraction", 0.4, 1.0),
            "bagging_fraction": trial.suggest_float("bagging_fraction", 0.5, 1.0),
            "bagging_freq": 1,
            "lambda_l2": trial.suggest_float("lambda_l2", 1e-3, 10.0, log=True),
        }
        choice = str(trial.suggest_categorical("point_objective", POINT_OBJECTIVES))
        pull = trial.suggest_float("economy_pull", 1e-3, 5e-2, log=True)
        damping = trial.suggest_float("damping", 0.05, 1.0, log=True)
        point = fit_point_model(
            params,
            choice=choice,
            pull=pull,
            damping=damping,
            rounds=self.config.max_boost_rounds,
            fit=(self.fit_matrix, self.fit_examples),
            valid=(self.valid_matrix, self.valid_examples),
            callbacks=[_Prune(trial)],
            early_stopping_rounds=self.config.early_stopping_rounds,
        )
        trial.set_user_attr("best_iteration", point.best_iteration)
        predicted = (
            size_offset(self.valid_matrix)
            + point.init
            + np.asarray(
                point.booster.predict(self.valid_matrix, num_iteration=point.best_iteration)
            )
        )
        if not self.scored:
            # No curves to score against: the log-size error is the honest fallback.
            best = np.array([size_target(e.optimal_size) for e in self.valid_examples])
            return float(np.mean(np.abs(predicted - best)))
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


def search_lightgbm(
    engine: Engine, examples: Sequence[Example], config: SearchConfig
) -> SearchResult:
    """Tune LightGBM with Optuna on a group split of ``examples``, then refit on all of them.

    A share of the examples lose their optional measurements first
    (:func:`trainer.examples.with_some_unmeasured`), so the model also serves hosts that
    cannot take them.
    """
    examples = with_some_unmeasured(examples, seed=config.seed)
    fit_examples, valid_examples = split_by_group(
        examples, test_fraction=config.validation_fraction, seed=config.seed + 1
    )
    if not fit_examples or not valid_examples:
        raise ValueError("too few workload groups to hold some out for validation")
    objective = LightGBMObjective(
        fit_examples=fit_examples, valid_examples=valid_examples, config=config
    )
    study_name = f"{config.study_prefix}-{engine.value}-{data_fingerprint(examples)}"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        study_name=study_name,
        storage=optuna_storage(config.storage_url) if config.storage_url else None,
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
    study.optimize(objective, n_trials=config.trials, timeout=config.timeout_s, callbacks=callbacks)
    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    if not complete:
        raise RuntimeError(f"no trial of study {study_name!r} completed")
    best = study.best_trial
    searched = {
        k: v
        for k, v in best.params.items()
        if k not in {"point_objective", "economy_pull", "damping"}
    }
    params = _base_params(config.seed) | searched | {"bagging_freq": 1}
    rounds = max(10, int(best.user_attrs.get("best_iteration", 100)))
    point: dict[str, Any] = {
        "point": str(best.params.get("point_objective", "l2")),
        "pull": float(best.params.get("economy_pull", 0.005)),
        "damping": float(best.params.get("damping", 0.3)),
    }
    model = fit_tuple_model(
        engine,
        examples,
        params=params,
        rounds=rounds,
        quantiles=config.quantiles,
        widen=conformal_widening(
            fit_examples,
            valid_examples,
            params=params,
            rounds=rounds,
            quantiles=config.quantiles,
            **point,
        ),
        **point,
    )
    return SearchResult(
        model=model,
        best_params=best.params,
        best_value=float(best.value if best.value is not None else float("nan")),
        trials=len(study.trials),
        study_name=study_name,
    )


def _fit_quantiles(
    matrix: NDArray[np.float64],
    target: NDArray[np.float64],
    params: dict[str, Any],
    rounds: int,
    quantiles: tuple[float, float],
) -> tuple[lgb.Booster, lgb.Booster]:
    quantile = params | {"objective": "quantile", "metric": "None"}
    low, high = (
        lgb.train(quantile | {"alpha": q}, lgb.Dataset(matrix, target), num_boost_round=rounds)
        for q in quantiles
    )
    return low, high


def conformal_widening(
    fit_examples: Sequence[Example],
    valid_examples: Sequence[Example],
    *,
    params: dict[str, Any],
    rounds: int,
    quantiles: tuple[float, float],
    point: str = "l2",
    pull: float = 0.005,
    damping: float = 0.3,
) -> float:
    """How much (log2) to widen the size range so it covers the nominal share of optima.

    Quantile boosters are often too wide or too narrow; as in conformalised quantile
    regression (Romano et al., 2019), held-out data fixes that: boosters fitted on one part of
    the training data predict ranges for the other, and the range is widened (or narrowed,
    when negative) by the smallest amount at which the nominal share of held-out optima falls
    inside it.
    """
    fit_matrix, valid_matrix = matrix_of(fit_examples), matrix_of(valid_examples)
    low, high = _fit_quantiles(
        fit_matrix, size_residuals(fit_examples, fit_matrix), params, rounds, quantiles
    )
    fitted = fit_point_model(
        params,
        choice=point,
        pull=pull,
        damping=damping,
        rounds=rounds,
        fit=(fit_matrix, fit_examples),
    )
    offset = size_offset(valid_matrix)
    point_log2 = offset + fitted.init + np.asarray(fitted.booster.predict(valid_matrix))
    # The served range always holds the served value (as TupleModel does).
    low_log2 = np.minimum(offset + np.asarray(low.predict(valid_matrix)), point_log2)
    high_log2 = np.maximum(offset + np.asarray(high.predict(valid_matrix)), point_log2)
    best = np.array([e.optimal_size for e in valid_examples], dtype=np.float64)
    nominal = quantiles[1] - quantiles[0]
    # Coverage is judged on the served ranges (rounded to whole sizes, clipped), so the
    # widening is chosen on those too: the smallest one reaching the nominal share.
    for widen in np.arange(-1.0, 2.0001, 0.01):
        low_sizes = clip_sizes(valid_examples, low_log2 - widen)
        high_sizes = clip_sizes(valid_examples, high_log2 + widen)
        if np.mean((best >= low_sizes) & (best <= high_sizes)) >= nominal:
            return float(round(widen, 2))
    return 2.0


def fit_tuple_model(
    engine: Engine,
    examples: Sequence[Example],
    *,
    params: dict[str, Any],
    rounds: int,
    quantiles: tuple[float, float],
    point: str = "l2",
    pull: float = 0.005,
    damping: float = 0.3,
    widen: float = 0.0,
) -> TupleModel:
    """Fit the point and quantile boosters for every tuned knob the examples carry.

    The pool size uses ``point`` (possibly the regret objective) on residuals over
    :func:`trainer.features.size_offset`; the other knobs learn log2 of their best value.
    """
    size_name = knobs.POOL_SIZE_KNOB[engine]
    knob_models = {}
    for knob in knobs.tuned_knobs(engine):
        having = [e for e in examples if knob.name in e.optimal_tuple]
        if not having:
            continue
        matrix = matrix_of(having)
        if knob.name == size_name:
            target = size_residuals(having, matrix)
        else:
            target = np.array([size_target(e.optimal_tuple[knob.name]) for e in having])
        if np.ptp(target) == 0:
            knob_models[knob.name] = KnobModel(
                median=None,
                low=None,
                high=None,
                constant=float(target[0]),
                offset=knob.name == size_name,
            )
            continue
        if knob.name == size_name:
            fitted = fit_point_model(
                params,
                choice=point,
                pull=pull,
                damping=damping,
                rounds=rounds,
                fit=(matrix, having),
            )
            median, init = fitted.booster, fitted.init
        else:
            median = lgb.train(params, lgb.Dataset(matrix, target), num_boost_round=rounds)
            init = 0.0
        low, high = _fit_quantiles(matrix, target, params, rounds, quantiles)
        knob_models[knob.name] = KnobModel(
            median=median,
            low=low,
            high=high,
            offset=knob.name == size_name,
            init=init,
            widen=widen if knob.name == size_name else 0.0,
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
