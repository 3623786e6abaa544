"""A search over a few workloads scores each trial leave-one-workload-out."""

from __future__ import annotations

from typing import Any

import optuna
import pytest

from agents.knobs import Engine
from trainer import search
from trainer.examples import workload_of
from trainer.fit import fit_point_model
from trainer.search import GroupFoldObjective, SearchConfig, search_lightgbm

from .synthetic import synthetic_examples


def test_no_fold_trains_on_the_workload_it_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    examples = synthetic_examples(6, seed=5, profiles_per_group=3)
    trained_on: list[set[str]] = []

    def recording(*args: Any, **kwargs: Any) -> Any:
        trained_on.append({workload_of(e.group) for e in kwargs["fit"][1]})
        return fit_point_model(*args, **kwargs)

    monkeypatch.setattr(search, "fit_point_model", recording)
    objective = GroupFoldObjective(examples, SearchConfig(seed=0))
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    study.optimize(objective, n_trials=1)
    workloads = {workload_of(e.group) for e in examples}
    # One fold per workload, each trained on all the others and only them.
    assert sorted(map(sorted, trained_on)) == sorted(sorted(workloads - {w}) for w in workloads)
    assert 0.0 <= study.best_value < 1.0


def test_few_workloads_take_the_trials_round_count_and_start() -> None:
    examples = synthetic_examples(8, seed=3, profiles_per_group=2)
    result = search_lightgbm(Engine.MARIADB, examples, SearchConfig(trials=3, seed=0))
    assert {"rounds", "centred"} <= set(result.best_params)
    # The trial's own round count, not the split search's floor of 10 rounds.
    assert result.recipe.rounds == result.best_params["rounds"]
    assert result.recipe.point.centred == result.best_params["centred"]
    many = synthetic_examples(40, seed=3, profiles_per_group=2)
    split = search_lightgbm(Engine.MARIADB, many, SearchConfig(trials=2, seed=0))
    assert "rounds" not in split.best_params and split.recipe.rounds >= 10
