"""The Optuna search over LightGBM's parameters and the point objective, then the refit.

Each trial fits the size model on one group split of the training data and scores its mean
throughput regret on the other, pruning on the validation regret LightGBM reports every few
rounds. The study lives in an Optuna storage under a name derived from the data, so a search
resumes and several trainer processes can share it (docs/trainer.md, "Search"). Real
examples weigh as the configured :class:`~trainer.weighting.DomainWeighting` says, in the
trials and in the refit (:mod:`trainer.refit`), which also calibrates the model.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import lightgbm as lgb
import numpy as np
import optuna
from numpy.typing import NDArray

from agents.knobs import Engine
from service.recommendations.tuple_model import TupleModel
from service.recommendations.workload_features import size_offset
from trainer.examples import Example, split_by_group, with_some_unmeasured, workload_of
from trainer.features import clip_sizes, matrix_of, size_target
from trainer.fit import PointFit, Recipe, base_params, fit_point_model
from trainer.objective import POINT_OBJECTIVES, PointObjective
from trainer.refit import fit_calibrated
from trainer.regret import regrets
from trainer.uncertainty import HeldOut
from trainer.weighting import DomainWeighting, sample_weights

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
    #: How real examples count against simulated ones.
    weighting: DomainWeighting = field(default_factory=DomainWeighting)
    #: A secondary knob leaves its default only for a predicted gain above this.
    secondary_min_gain: float = 0.05
    #: Most folds of the real cross-validation (one per real workload group up to this).
    real_folds: int = 10
    #: With fewer workloads than this (an engine with only a few real ones), each trial is
    #: scored leave-one-workload-out over all of them instead of on one validation split.
    fold_below_groups: int = 20
    #: Called after each trial with (finished trials, best value): progress bars hook in here.
    on_trial: Callable[[int, float], None] | None = field(default=None, compare=False)
    #: Called with a short description of each stage after the search.
    on_stage: Callable[[str], None] | None = field(default=None, compare=False)


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


def data_fingerprint(examples: Sequence[Example]) -> str:
    digest = hashlib.sha256()
    for example in sorted(examples, key=lambda e: (e.group, e.origin)):
        digest.update(f"{example.group}|{example.origin}|{example.optimal_size}\n".encode())
    return digest.hexdigest()[:12]


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


def suggest(
    trial: optuna.Trial, config: SearchConfig, *, fit_count: int
) -> tuple[dict[str, Any], PointObjective]:
    """One trial's LightGBM parameters and point objective."""
    params = base_params(config.seed) | {
        "learning_rate": trial.suggest_float("learning_rate", 0.02, 0.3, log=True),
        "num_leaves": trial.suggest_int("num_leaves", 7, 127, log=True),
        # LightGBM cannot split at all when a leaf needs more than half the rows.
        "min_data_in_leaf": trial.suggest_int(
            "min_data_in_leaf", 2, max(2, min(200, fit_count // 4)), log=True
        ),
        "feature_fraction": trial.suggest_float("feature_fraction", 0.4, 1.0),
        "bagging_fraction": trial.suggest_float("bagging_fraction", 0.5, 1.0),
        "bagging_freq": 1,
        "lambda_l2": trial.suggest_float("lambda_l2", 1e-3, 10.0, log=True),
    }
    point = PointObjective(
        kind=str(trial.suggest_categorical("point_objective", POINT_OBJECTIVES)),
        pull=trial.suggest_float("economy_pull", 1e-3, 5e-2, log=True),
        damping=trial.suggest_float("damping", 0.05, 1.0, log=True),
    )
    return params, point


def predicted_log2_sizes(fitted: PointFit, matrix: NDArray[np.float64]) -> NDArray[np.float64]:
    """A point booster's log2 sizes for ``matrix`` at its best iteration."""
    scores = fitted.booster.predict(matrix, num_iteration=fitted.best_iteration)
    return size_offset(matrix) + fitted.init + np.asarray(scores, dtype=np.float64)


class GroupFoldObjective:
    """Optuna objective for a few workload groups (an engine with only real data): the mean
    regret of leave-one-group-out over every group, each fold fitted with the trial's round
    count (no early stopping: the held-out group never steers its own fit). A single slow
    round is a candidate — the size offset nearly alone — so a few dozen cases cannot buy a
    model that does worse than the theory it corrects."""

    def __init__(self, examples: Sequence[Example], config: SearchConfig) -> None:
        self.examples = list(examples)
        self.matrix = matrix_of(self.examples)
        self.config = config
        self.weights = sample_weights(self.examples, real_share=config.weighting.real_share)
        self.groups = np.array([workload_of(e.group) for e in self.examples])
        self.scored = np.array([e.curve is not None for e in self.examples])

    def __call__(self, trial: optuna.Trial) -> float:
        params, point = suggest(trial, self.config, fit_count=len(self.examples))
        point = replace(point, centred=trial.suggest_categorical("centred", (True, False)))
        rounds = trial.suggest_int("rounds", 1, self.config.max_boost_rounds // 3, log=True)
        trial.set_user_attr("best_iteration", rounds)
        trial.set_user_attr("fixed_rounds", True)
        regret_sum, count = 0.0, 0
        for group in np.unique(self.groups):
            test = np.flatnonzero((self.groups == group) & self.scored)
            train = np.flatnonzero(self.groups != group)
            if not test.size or np.unique(self.groups[train]).size < 2:
                continue
            fitted = fit_point_model(
                params,
                point=point,
                rounds=rounds,
                fit=(self.matrix[train], [self.examples[i] for i in train]),
                weights=self.weights[train],
            )
            log2_sizes = predicted_log2_sizes(fitted, self.matrix[test])
            held = [self.examples[i] for i in test]
            sizes = clip_sizes(held, log2_sizes)
            values = regrets([e.curve for e in held if e.curve is not None], list(sizes))
            regret_sum += float(np.sum(values))
            count += len(values)
        if not count:
            raise optuna.TrialPruned("no group to hold out")
        return regret_sum / count


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
        share = config.weighting.real_share
        self.fit_weights = sample_weights(self.fit_examples, real_share=share)
        self.valid_weights = sample_weights(self.valid_examples, real_share=share)
        self.scored = [i for i, e in enumerate(valid_examples) if e.curve is not None]

    def __call__(self, trial: optuna.Trial) -> float:
        params, point = suggest(trial, self.config, fit_count=len(self.fit_examples))
        fitted = fit_point_model(
            params,
            point=point,
            rounds=self.config.max_boost_rounds,
            fit=(self.fit_matrix, self.fit_examples),
            valid=(self.valid_matrix, self.valid_examples),
            callbacks=[_Prune(trial)],
            early_stopping_rounds=self.config.early_stopping_rounds,
            weights=self.fit_weights,
            valid_weights=self.valid_weights,
        )
        trial.set_user_attr("best_iteration", fitted.best_iteration)
        predicted = predicted_log2_sizes(fitted, self.valid_matrix)
        if not self.scored:
            # No curves to score against: the log-size error is the honest fallback.
            best = np.array([size_target(e.optimal_size) for e in self.valid_examples])
            return float(np.average(np.abs(predicted - best), weights=self.valid_weights))
        valid = [self.valid_examples[i] for i in self.scored]
        sizes = clip_sizes(valid, predicted[self.scored])
        values = regrets([e.curve for e in valid if e.curve is not None], list(sizes))
        return float(np.average(values, weights=self.valid_weights[self.scored]))


@dataclass
class SearchResult:
    model: TupleModel
    #: What the refit used: the best trial's parameters, rounds and point objective.
    recipe: Recipe
    #: The held-out answers the model's calibration was fitted on, by domain: the simulated
    #: validation workloads and the real cross-validation.
    held_out: dict[str, HeldOut]
    #: The best trial's parameters as Optuna names them (for summaries and the model card).
    best_params: dict[str, Any]
    best_value: float
    trials: int
    study_name: str


def validation_split(
    examples: Sequence[Example], config: SearchConfig
) -> tuple[list[Example], list[Example], list[Example]]:
    """(every example, the fit part, the validation part): a share of the examples lose their
    optional measurements first (:func:`trainer.examples.with_some_unmeasured`), then the
    groups are split."""
    masked = with_some_unmeasured(examples, seed=config.seed)
    fit_examples, valid_examples = split_by_group(
        masked, test_fraction=config.validation_fraction, seed=config.seed + 1
    )
    if not fit_examples or not valid_examples:
        raise ValueError("too few workload groups to hold some out for validation")
    return masked, fit_examples, valid_examples


def search_lightgbm(
    engine: Engine, examples: Sequence[Example], config: SearchConfig
) -> SearchResult:
    """Tune LightGBM with Optuna on a group split of ``examples``, then refit on all of them.

    A share of the examples lose their optional measurements first
    (:func:`trainer.examples.with_some_unmeasured`), so the model also serves hosts that
    cannot take them.
    """
    examples, fit_examples, valid_examples = validation_split(examples, config)
    objective: GroupFoldObjective | LightGBMObjective
    if len({workload_of(e.group) for e in examples}) < config.fold_below_groups:
        objective = GroupFoldObjective(examples, config)
    else:
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
    recipe = best_recipe(
        best,
        seed=config.seed,
        quantiles=config.quantiles,
        weighting=config.weighting,
        secondary_min_gain=config.secondary_min_gain,
    )
    fitted = fit_calibrated(
        engine,
        examples,
        recipe,
        validation=(fit_examples, valid_examples),
        seed=config.seed,
        real_folds=config.real_folds,
        on_stage=config.on_stage,
    )
    return SearchResult(
        model=fitted.model,
        recipe=recipe,
        held_out=fitted.held_out,
        best_params=best.params,
        best_value=float(best.value if best.value is not None else float("nan")),
        trials=len(study.trials),
        study_name=study_name,
    )


def best_recipe(
    trial: optuna.trial.FrozenTrial,
    *,
    seed: int,
    quantiles: tuple[float, float],
    weighting: DomainWeighting | None = None,
    secondary_min_gain: float = 0.05,
) -> Recipe:
    """The refit's recipe from a finished trial: its LightGBM parameters over the shared
    ones, its best round count (at least 10) and its point objective."""
    point_names = {"point_objective", "economy_pull", "damping", "centred", "rounds"}
    searched = {k: v for k, v in trial.params.items() if k not in point_names}
    rounds = int(trial.user_attrs.get("best_iteration", 100))
    return Recipe(
        params=base_params(seed) | searched | {"bagging_freq": 1},
        rounds=rounds if trial.user_attrs.get("fixed_rounds") else max(10, rounds),
        point=PointObjective(
            kind=str(trial.params.get("point_objective", "l2")),
            pull=float(trial.params.get("economy_pull", 0.005)),
            damping=float(trial.params.get("damping", 0.3)),
            centred=bool(trial.params.get("centred", True)),
        ),
        quantiles=quantiles,
        weighting=weighting or DomainWeighting(),
        secondary_min_gain=secondary_min_gain,
    )
