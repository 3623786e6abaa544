"""Workload-change detection while holding: steps are caught, noise and drift are not."""

from __future__ import annotations

import math
import random

from agents.climber import PooltuneConfig
from agents.climber.pooltune.change import ChangeDetector

NOISE = 0.065  # the climber's prior noise of a level (5% CV, inflated)


def detector(connections: float = 64.0) -> ChangeDetector:
    return ChangeDetector(PooltuneConfig(), baseline=math.log(100.0), connections=connections)


def first_alarm(change: ChangeDetector, throughputs: list[float]) -> int | None:
    for index, throughput in enumerate(throughputs):
        if change.observe(math.log(throughput), 64, NOISE) is not None:
            return index
    return None


def test_noise_and_slow_drift_are_not_a_change() -> None:
    rng = random.Random(0)
    stationary = [100 * (1 + rng.gauss(0, 0.05)) for _ in range(1800)]
    assert first_alarm(detector(), stationary) is None
    # +20% over an hour of 2-s samples, with the same noise.
    drifting = [v * 1.2 ** (i / 1800) for i, v in enumerate(stationary)]
    assert first_alarm(detector(), drifting) is None


def test_a_step_in_throughput_is_a_change() -> None:
    rng = random.Random(1)
    before = [100 * (1 + rng.gauss(0, 0.05)) for _ in range(300)]
    after = [60 * (1 + rng.gauss(0, 0.05)) for _ in range(30)]
    change = detector()
    assert first_alarm(change, before) is None
    alarm = first_alarm(change, after)
    assert alarm is not None and alarm < 10
    reason = change.observe(math.log(60.0), 64, NOISE)
    assert reason == "throughput fell away from the held level"


def test_the_connection_count_moving_for_two_samples_is_a_change() -> None:
    change = detector(connections=64)
    level = math.log(100.0)
    assert change.observe(level, 96, NOISE) is None  # one sample may be a blip
    assert change.observe(level, 64, NOISE) is None
    assert change.observe(level, 96, NOISE) is None
    assert change.observe(level, 96, NOISE) == "connections moved from 64 to 96"


def test_a_pause_clears_what_was_summed_before_it() -> None:
    falling = [70.0] * 4
    without_pause = detector()
    assert first_alarm(without_pause, falling + falling) is not None
    with_pause = detector()
    assert first_alarm(with_pause, falling) is None
    with_pause.resume()
    assert first_alarm(with_pause, falling) is None


def test_without_a_baseline_the_first_sample_sets_it() -> None:
    change = ChangeDetector(PooltuneConfig(), baseline=None, connections=None)
    assert change.observe(math.log(100.0), 10, NOISE) is None
    assert change.baseline == math.log(100.0)
    assert change.observe(math.log(100.0), 20, NOISE) is None
    assert change.observe(math.log(100.0), 20, NOISE) == "connections moved from 10 to 20"
