import numpy as np
import pytest

from agents.knobs import Engine
from trainer.artifact import ArtifactError, TupleModel
from trainer.evaluation import baseline_predictors, best_baseline, evaluate
from trainer.examples import groups, split_by_group
from trainer.features import FEATURES, feature_row
from trainer.models import SearchConfig, SklearnSizeModel, predict_sizes, search_lightgbm

from .synthetic import synthetic_examples


@pytest.fixture(scope="module")
def examples():  # type: ignore[no-untyped-def]
    return synthetic_examples(500, seed=3, profiles_per_group=2)


def test_split_keeps_each_workload_on_one_side(examples) -> None:  # type: ignore[no-untyped-def]
    train, test = split_by_group(examples, test_fraction=0.25, seed=1)
    assert groups(train).isdisjoint(groups(test))
    assert 0.15 < len(test) / len(examples) < 0.35
    again, _ = split_by_group(examples, test_fraction=0.25, seed=1)
    assert [e.origin for e in again] == [e.origin for e in train]
    other, _ = split_by_group(examples, test_fraction=0.25, seed=2)
    assert [e.origin for e in other] != [e.origin for e in train]


def test_features_carry_the_theory(examples) -> None:  # type: ignore[no-untyped-def]
    e = examples[0]
    row = feature_row(e.host, e.profile)
    blocking = e.profile.wait_ms_per_request / e.profile.cpu_ms_per_request
    assert row["blocking_coefficient"] == pytest.approx(blocking)
    assert row["heuristic_size"] == pytest.approx(e.host.cpu_count * (1 + blocking))
    assert row["little_concurrency"] == pytest.approx(e.profile.qps * e.profile.latency_ms / 1000)
    assert row["connections_per_core"] == pytest.approx(e.profile.connections / e.host.cpu_count)
    assert row["log_connections"] == pytest.approx(np.log1p(e.profile.connections))
    assert set(row) == set(FEATURES)


def test_lightgbm_search_beats_the_baselines_and_round_trips(examples) -> None:  # type: ignore[no-untyped-def]
    train, test = split_by_group(examples, test_fraction=0.25, seed=0)
    result = search_lightgbm(Engine.MARIADB, train, SearchConfig(trials=3, seed=0))
    assert result.trials == 3
    scores = evaluate(
        test=test,
        models={"lightgbm": result.model},
        predictors=baseline_predictors(train) | {"sklearn": SklearnSizeModel().fit(train).predict},
    )
    baseline = best_baseline(scores, ["default", "heuristic", "little", "nearest"])
    assert scores["lightgbm"].regret.mean < baseline.regret.mean
    assert scores["default"].regret.mean > 0.2  # the default is far off on these workloads
    assert scores["lightgbm"].coverage is not None and scores["lightgbm"].coverage > 0.5

    loaded = TupleModel.from_bytes(result.model.to_bytes())
    assert np.array_equal(predict_sizes(loaded, test)[0], predict_sizes(result.model, test)[0])
    start, ranges = loaded.predict(test[0].host, test[0].profile)
    assert set(start) == {"thread_pool_size", "thread_pool_oversubscribe"}
    assert start["thread_pool_oversubscribe"] == 3  # constant target → constant answer
    low, high = ranges["thread_pool_size"]
    assert low <= start["thread_pool_size"] <= high


def test_artifact_loader_refuses_foreign_bytes() -> None:
    with pytest.raises(ArtifactError, match="not JSON"):
        TupleModel.from_bytes(b"\x80\x04pickle")
    with pytest.raises(ArtifactError, match="unknown artifact format"):
        TupleModel.from_bytes(b'{"format": "other/9"}')
