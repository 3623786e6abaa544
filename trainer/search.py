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
from dataclasses import dataclass, field
from typing import Any

import lightgbm as lgb
import numpy as np
import optuna

from agents.knobs import Engine
from service.recommendations.tuple_model import TupleModel
from service.recommendations.workload_features import size_offset
from trainer.examples import Example, split_by_group, with_some_unmeasured
from trainer.features import clip_sizes, matrix_of, size_target
from trainer.fit import Recipe, base_params, fit_point_model
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
        params = base_params(self.config.seed) | {
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
        point = PointObjective(
            kind=str(trial.suggest_categorical("point_objective", POINT_OBJECTIVES)),
            pull=trial.suggest_float("economy_pull", 1e-3, 5e-2, log=True),
            damping=trial.suggest_float("damping", 0.05, 1.0, log=True),
        )
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
        predicted = (
            size_offset(self.valid_matrix)
            + fitted.init
            + np.asarray(
                fitted.booster.predict(self.valid_matrix, num_iteration=fitted.best_iteration)
            )
        )
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
    point_names = {"point_objective", "economy_pull", "damping"}
    searched = {k: v for k, v in trial.params.items() if k not in point_names}
    return Recipe(
        params=base_params(seed) | searched | {"bagging_freq": 1},
        rounds=max(10, int(trial.user_attrs.get("best_iteration", 100))),
        point=PointObjective(
            kind=str(trial.params.get("point_objective", "l2")),
            pull=float(trial.params.get("economy_pull", 0.005)),
            damping=float(trial.params.get("damping", 0.3)),
        ),
        quantiles=quantiles,
        weighting=weighting or DomainWeighting(),
        secondary_min_gain=secondary_min_gain,
    )
