"""Honest uncertainty: ranges that never collapse away from the catalog's edges, cover the
nominal share of held-out optima, widen (and say so) outside the training data; predicted
gains whose interval holds the gain read off held-out simulated curves."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from agents.knobs import Engine
from agents.wire import HostFacts, WorkloadProfile
from service.recommendations.intervals import SIMULATED, Calibration, served_range
from service.recommendations.tuple_model import TupleModel
from trainer import simcorpus
from trainer.evaluation import ood_widening, score_gains, score_tuple_model
from trainer.examples import Example, split_by_group
from trainer.search import SearchConfig, search_lightgbm
from trainer.sources import datasets

from .synthetic import synthetic_examples


@pytest.fixture(scope="module")
def synthetic() -> tuple[TupleModel, list[Example]]:
    train, test = split_by_group(synthetic_examples(600, seed=5), test_fraction=0.25, seed=0)
    model = search_lightgbm(Engine.MARIADB, train, SearchConfig(trials=2, seed=0)).model
    return model, test


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> tuple[TupleModel, list[Example]]:
    """A model trained on workloads of the queueing simulator, and held-out ones."""
    workloads, curves = simcorpus.build_corpus(300, seed=11, processes=1)
    directory = tmp_path_factory.mktemp("data") / "sim-test"
    datasets.write_dataset(
        directory, name="sim-test", workloads=workloads, curves=curves, command="t", description={}
    )
    examples = datasets.examples(datasets.load_dataset(directory))
    train, test = split_by_group(examples, test_fraction=0.3, seed=0)
    return search_lightgbm(Engine.MARIADB, train, SearchConfig(trials=2, seed=0)).model, test


def host(cores: int) -> HostFacts:
    return HostFacts(
        hostname="h", engine="mariadb", engine_version="10.11", cpu_count=cores, memory_bytes=0
    )


def profile(*, connections: int, cpu_ms: float, wait_ms: float, qps: float) -> WorkloadProfile:
    return WorkloadProfile(
        window_s=30.0,
        connections=connections,
        active_connections=min(connections, 60),
        qps=qps,
        tps=qps / 10,
        latency_ms=cpu_ms + wait_ms,
        cpu_ms_per_request=cpu_ms,
        wait_ms_per_request=wait_ms,
    )


def test_the_served_range_keeps_a_step_either_side_unless_a_bound_forces_it() -> None:
    values = np.array([1, 2, 17, 128, 64, 10])
    upper = np.array([128.0, 128.0, 128.0, 128.0, 64.0, 128.0])
    no_spread = Calibration(low=0.0, high=0.0)
    low, high = served_range(values, np.ones(6), no_spread, lower=1.0, upper=upper)
    assert low.tolist() == [1, 1, 16, 127, 63, 9]
    assert high.tolist() == [2, 3, 18, 128, 64, 11]
    wide = Calibration(low=-1.0, high=0.5)
    low, high = served_range(values, np.full(6, 2.0), wide, lower=1.0, upper=upper)
    assert low.tolist() == [1, 1, 4, 32, 16, 2]
    assert high.tolist() == [2, 4, 34, 128, 64, 20]


def test_ranges_never_collapse_away_from_the_catalog_edge(
    synthetic: tuple[TupleModel, list[Example]],
) -> None:
    model, test = synthetic
    cases = [(e.host, e.profile) for e in test] + [
        # Long waits on 8 cores: the point sits at the catalog's top (128).
        (host(8), profile(connections=2000, cpu_ms=0.5, wait_ms=20.0, qps=2000)),
        # CPU-bound on 2 cores: the point sits near the bottom.
        (host(2), profile(connections=64, cpu_ms=1.0, wait_ms=0.02, qps=1900)),
    ]
    for facts, workload in cases:
        size = model.recommend(facts, workload)
        value = size.values["thread_pool_size"]
        low, high = size.ranges["thread_pool_size"]
        ceiling = min(128, workload.connections)
        assert low < value or value == 1, (value, low, high)
        assert high > value or value == ceiling, (value, low, high)
    top = model.recommend(*cases[-2])
    assert top.values["thread_pool_size"] == 128
    assert top.ranges["thread_pool_size"][0] < 128


def test_ranges_cover_the_nominal_share_of_held_out_optima(
    synthetic: tuple[TupleModel, list[Example]],
) -> None:
    model, test = synthetic
    score = score_tuple_model("lightgbm", model, test, domain=SIMULATED)
    assert score.coverage is not None
    assert abs(score.coverage - model.nominal_coverage) <= 0.1, score.coverage


def test_profiles_outside_the_training_ranges_get_wider_ranges_and_a_flag(
    synthetic: tuple[TupleModel, list[Example]],
) -> None:
    """Training hosts have 2 to 32 cores and W/S up to 15. Held-out workloads on 48 cores
    (against the same on 32), or waiting 200 × their CPU time (against as measured), are
    flagged and get ranges at least twice as wide in log size (unless both ends hit a
    bound); in distribution almost nothing is flagged."""
    model, test = synthetic
    inside = [model.recommend(e.host, e.profile) for e in test]
    assert np.mean([a.out_of_distribution for a in inside]) <= 0.05
    assert np.median([a.novelty for a in inside if a.novelty is not None]) < 1.0

    def cores(e: Example, count: int) -> tuple[HostFacts, WorkloadProfile]:
        return e.host.model_copy(update={"cpu_count": count}), e.profile

    def waiting(e: Example) -> tuple[HostFacts, WorkloadProfile]:
        cpu = e.profile.cpu_ms_per_request or 1.0
        update = {"wait_ms_per_request": 200 * cpu, "latency_ms": 201 * cpu}
        return e.host, e.profile.model_copy(update=update)

    pushes = {
        "48 cores": [(cores(e, 32), cores(e, 48)) for e in test if e.host.cpu_count == 32],
        "W/S 200": [((e.host, e.profile), waiting(e)) for e in test],
    }
    for label, pairs in pushes.items():
        ratios = []
        for near_case, far_case in pairs:
            near = model.recommend(*near_case)
            far = model.recommend(*far_case)
            assert far.out_of_distribution, label
            if near.out_of_distribution:
                continue  # a held-out profile already past the training ranges
            assert far.novelty is not None
            low, high = far.ranges["thread_pool_size"]
            if low == 1 and high == min(128, far_case[1].connections):
                continue  # as wide as the bounds allow
            near_low, near_high = near.ranges["thread_pool_size"]
            ratios.append(np.log2(high / low) / np.log2(near_high / near_low))
        assert len(ratios) > len(pairs) // 4, label
        assert np.median(ratios) >= 2.0, label


def test_the_card_pushes_waits_past_what_the_training_data_reached(
    synthetic: tuple[TupleModel, list[Example]],
) -> None:
    """W/S 200 is out of distribution only while no training workload waits that long: with
    one at 300, the card's profiles wait 600 × their CPU time, and are flagged."""
    model, test = synthetic
    assert "wait_over_cpu_200_flagged" in ood_widening(model, test[:50])
    long_wait = test[0].profile.model_copy(
        update={"cpu_ms_per_request": 0.1, "wait_ms_per_request": 30.0}
    )
    trained = [replace(test[0], profile=long_wait)]
    moved = ood_widening(model, test[:50], trained=trained)
    assert "wait_over_cpu_200_flagged" not in moved
    assert moved["wait_over_cpu_600_flagged"] == 1.0


def test_the_predicted_gain_holds_on_held_out_simulated_curves(
    simulated: tuple[TupleModel, list[Example]],
) -> None:
    model, test = simulated
    gains = score_gains(model, test, domain=SIMULATED)
    assert gains is not None and gains.count == len(test)
    assert gains.coverage >= 0.7, gains
    assert gains.median_abs_error <= 0.08, gains
    case = test[0]
    answer = model.recommend(case.host, case.profile)
    gain = answer.predicted_gain
    assert gain is not None and gain.low <= gain.estimate <= gain.high
    # Already at the recommended tuple: exactly no gain, no spread.
    same = model.recommend(case.host, case.profile, answer.values).predicted_gain
    assert same is not None and (same.estimate, same.low, same.high) == (1.0, 1.0, 1.0)


def test_novelty_and_the_flag_survive_the_artifact(
    synthetic: tuple[TupleModel, list[Example]],
) -> None:
    from trainer.artifact import artifact_bytes

    model, test = synthetic
    loaded = TupleModel.from_bytes(artifact_bytes(model))
    far = replace(test[0], host=test[0].host.model_copy(update={"cpu_count": 192}))
    for e in (test[0], far):
        assert loaded.recommend(e.host, e.profile) == model.recommend(e.host, e.profile)
