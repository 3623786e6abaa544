from dataclasses import replace

import numpy as np
import pytest

from agents.knobs import Engine
from service.recommendations.predictor import ArtifactError
from service.recommendations.tuple_model import TupleModel
from service.recommendations.workload_features import FEATURES, feature_row
from trainer.artifact import artifact_bytes
from trainer.evaluation import baseline_predictors, best_baseline, evaluate, predict_sizes
from trainer.examples import groups, split_by_group, with_some_unmeasured
from trainer.fit import SklearnSizeModel
from trainer.search import SearchConfig, search_lightgbm

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


def test_contention_features_follow_the_universal_scalability_law(examples) -> None:  # type: ignore[no-untyped-def]
    """sync_share is the synchronisation time over the CPU time; with r threads running
    (busy cores by the CPU time) USL gives share ≈ κ·r(r−1), which coherency_estimate
    inverts. Unknown sync time leaves both unknown."""
    e = examples[0]
    cpu = e.profile.cpu_ms_per_request
    profile = e.profile.model_copy(update={"sync_ms_per_request": 0.25 * cpu})
    row = feature_row(e.host, profile)
    assert row["sync_share"] == pytest.approx(0.25)
    running = e.profile.qps * cpu / 1000.0
    assert row["coherency_estimate"] == pytest.approx(0.25 / (running * max(running - 1, 1)))
    unknown = feature_row(e.host, e.profile.model_copy(update={"sync_ms_per_request": None}))
    assert np.isnan(unknown["sync_share"]) and np.isnan(unknown["coherency_estimate"])


def test_some_examples_lose_their_optional_measurements_stably(examples) -> None:  # type: ignore[no-untyped-def]
    measured = [
        replace(e, profile=e.profile.model_copy(update={"sync_ms_per_request": 0.1}))
        for e in examples
    ]
    masked = with_some_unmeasured(measured, share=0.25, seed=0)
    unknown = {e.group for e in masked if e.profile.sync_ms_per_request is None}
    assert 0.15 < len(unknown) / len(groups(measured)) < 0.35
    # By workload group: every profile of a group is masked alike, the same every run.
    assert all((e.profile.sync_ms_per_request is None) == (e.group in unknown) for e in masked)
    again = with_some_unmeasured(measured, share=0.25, seed=0)
    assert [e.profile for e in again] == [e.profile for e in masked]
    assert [e.profile for e in measured][0].sync_ms_per_request == 0.1  # inputs untouched
    assert with_some_unmeasured(measured, share=0.0) == measured
    with pytest.raises(ValueError, match="share"):
        with_some_unmeasured(measured, share=1.5)


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

    loaded = TupleModel.from_bytes(artifact_bytes(result.model))
    for answer in (predict_sizes(result.model, test), predict_sizes(loaded, test)):
        assert np.array_equal(answer[0], predict_sizes(result.model, test)[0])
        assert np.array_equal(answer[1], predict_sizes(result.model, test)[1])
    start, ranges = loaded.predict(test[0].host, test[0].profile)
    assert set(start) == {
        "thread_pool_size",
        "thread_pool_oversubscribe",
        "thread_pool_stall_limit",
    }
    # No workload has a stall-limit curve: nothing says it matters, so its default.
    assert start["thread_pool_stall_limit"] == 500
    low, high = ranges["thread_pool_size"]
    assert low <= start["thread_pool_size"] <= high


def test_a_secondary_knob_leaves_its_default_only_where_a_gain_is_expected(examples) -> None:  # type: ignore[no-untyped-def]
    """Oversubscribe 32 brings +20% on the IO-heavy workloads (W/S > 5) and nothing on the
    others: the model recommends it there and keeps the default 3 elsewhere."""
    train, test = split_by_group(examples, test_fraction=0.25, seed=0)
    model = search_lightgbm(Engine.MARIADB, train, SearchConfig(trials=2, seed=0)).model
    answers = [model.recommend(e.host, e.profile) for e in test]
    heavy = np.array([e.optimal_tuple["thread_pool_oversubscribe"] == 32 for e in test])
    chosen = np.array([a.values["thread_pool_oversubscribe"] for a in answers])
    assert 0.8 <= np.mean(chosen[heavy] == 32)
    assert 0.9 <= np.mean(chosen[~heavy] == 3)
    # Its expected gain (+20%) is the predicted gain over a host already at the size.
    case, answer = next(
        (e, a)
        for e, a in zip(test, answers, strict=True)
        if a.values["thread_pool_oversubscribe"] == 32
    )
    current = answer.values | {"thread_pool_oversubscribe": 3}
    gain = model.recommend(case.host, case.profile, current).predicted_gain
    assert gain is not None
    assert gain.estimate == pytest.approx(1.2, abs=0.08)
    assert gain.low < gain.estimate < gain.high


def test_artifact_loader_refuses_foreign_bytes() -> None:
    with pytest.raises(ArtifactError, match="not JSON"):
        TupleModel.from_bytes(b"\x80\x04pickle")
    with pytest.raises(ArtifactError, match="unknown artifact format"):
        TupleModel.from_bytes(b'{"format": "other/9"}')
