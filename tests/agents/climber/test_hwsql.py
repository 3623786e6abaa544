"""HWSQL's climber (registered as "reference"): every state transition and guard on exact curves.

Curves are noise-free and the host has 72 CPUs, so HWSQL's own magnitudes apply
(wave 10…63, eps 5, 300/s minimum) and the right answer is known in advance.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from agents.climber import EventKind, HwsqlClimber, Sample
from agents.climber.hwsql import first_harmonic
from agents.sim import KneeCurve, UslCurve
from tests.agents.climber.helpers import SIZE, drive, new, size_space

CPUS = 72


def reasons(climber: HwsqlClimber, kind: EventKind = EventKind.REINIT) -> list[str]:
    return [e.reason for e in climber.events if e.kind is kind]


def hwsql() -> HwsqlClimber:
    climber = new("reference", CPUS)
    assert isinstance(climber, HwsqlClimber)
    return climber


@pytest.mark.parametrize("start", [5, 120])
def test_usual_brackets_the_optimum_and_becomes_optimized(start: int) -> None:
    climber = hwsql()
    run = drive(
        climber,
        UslCurve.with_peak_at(40, connections=1000, cores=CPUS),
        start={SIZE: start},
        samples=300,
    )
    assert run.states[0] == "USUAL"
    assert run.states[-1] == "OPTIMIZED"
    assert climber.converged
    assert 35 <= climber.best_tuple[SIZE] <= 45
    # Holding: the size no longer moves once OPTIMIZED.
    assert len(set(run.sizes[-50:])) == 1


def test_plateau_walks_left_towards_the_knee() -> None:
    climber = hwsql()
    curve = KneeCurve(rate=10_000, knee_size=10, connections=1000, cores=CPUS)
    run = drive(climber, curve, start={SIZE: 100}, samples=500)
    assert "PLATEAU" in run.states
    assert run.states.index("PLATEAU") < run.states.index("OPTIMIZED")
    final = climber.best_tuple[SIZE]
    # The walk stops one step before the first step that loses more than 5%.
    assert 14 <= final <= 40
    assert final < 100


def test_optimized_is_left_when_throughput_moves_more_than_20_percent() -> None:
    climber = hwsql()
    curve = UslCurve.with_peak_at(40, connections=1000, cores=CPUS)

    def switch(index: int, server: object) -> None:
        if index == 250:
            server.switch_workload(replace(curve, rate=curve.rate * 1.5))  # type: ignore[attr-defined]

    run = drive(climber, curve, start={SIZE: 5}, samples=280, hook=switch)
    assert run.states[249] == "OPTIMIZED"
    assert any("OPTIMIZED left" in r for r in reasons(climber))
    assert run.states[-1] == "USUAL"


def test_jump_and_optimized_guards_keep_the_size_near_the_connection_count() -> None:
    climber = hwsql()
    # The curve alone would want 100 threads, but only 10 clients are connected.
    curve = UslCurve.with_peak_at(100, connections=10, cores=CPUS)
    run = drive(climber, curve, start={SIZE: 20}, samples=300)
    cap = 10 + 20  # connections + guard_excess_threads (72-core value)
    assert max(run.sizes[1:]) <= cap
    assert climber.best_tuple[SIZE] <= cap


def test_suspends_below_min_accepted_throughput_and_resumes() -> None:
    climber = hwsql()
    curve = KneeCurve(rate=100, knee_size=10, connections=100, cores=CPUS)  # < 300/s

    def boost(index: int, sample: Sample) -> Sample:
        return replace(sample, throughput=sample.throughput * 100) if index >= 20 else sample

    run = drive(climber, curve, start={SIZE: 10}, samples=40, sample_filter=boost)
    assert run.states[5] == "SUSPENDED"
    assert len(set(run.sizes[1:20])) == 1  # no wave while suspended
    kinds = [e.kind for e in climber.events]
    assert EventKind.SUSPENDED in kinds and EventKind.RESUMED in kinds
    assert run.states[-1] == "USUAL"


def test_manual_knob_change_reinitialises_around_the_new_value() -> None:
    climber = hwsql()
    curve = UslCurve.with_peak_at(40, connections=1000, cores=CPUS)

    def operator(index: int, sample: Sample) -> Sample:
        return replace(sample, knobs={SIZE: 90}) if index == 30 else sample

    run = drive(climber, curve, start={SIZE: 5}, samples=31, sample_filter=operator)
    assert "manual knob change" in reasons(climber)
    assert climber.events[-2].kind is EventKind.MANUAL_CHANGE
    assert run.states[-1] == "USUAL"
    assert climber.current_tuple[SIZE] == 90


def test_no_connections_reinitialises() -> None:
    climber = hwsql()
    curve = UslCurve.with_peak_at(40, connections=1000, cores=CPUS)

    def idle(index: int, sample: Sample) -> Sample:
        return replace(sample, connections=0, throughput=0.0) if index == 30 else sample

    drive(climber, curve, start={SIZE: 5}, samples=31, sample_filter=idle)
    assert reasons(climber) == ["no connections"]


def test_steep_drop_reinitialises() -> None:
    climber = hwsql()
    curve = UslCurve.with_peak_at(40, connections=1000, cores=CPUS)

    def crash(index: int, sample: Sample) -> Sample:
        return replace(sample, throughput=sample.throughput * 0.2) if index == 30 else sample

    drive(climber, curve, start={SIZE: 30}, samples=31, sample_filter=crash)
    assert reasons(climber) == ["unnaturally steep throughput drop"]


def test_curve_change_is_detected_by_two_interpolation_misses_in_a_row() -> None:
    climber = hwsql()
    curve = UslCurve.with_peak_at(40, connections=1000, cores=CPUS)

    def switch(index: int, server: object) -> None:
        if index == 10:
            server.switch_workload(replace(curve, rate=curve.rate * 1.4))  # type: ignore[attr-defined]

    drive(climber, curve, start={SIZE: 30}, samples=14, hook=switch)
    assert reasons(climber) == ["throughput curve changed (two misses in a row)"]


def test_one_miss_is_not_a_curve_change() -> None:
    climber = hwsql()
    curve = UslCurve.with_peak_at(40, connections=1000, cores=CPUS)

    def blip(index: int, sample: Sample) -> Sample:
        return replace(sample, throughput=sample.throughput * 1.3) if index == 10 else sample

    drive(climber, curve, start={SIZE: 30}, samples=14, sample_filter=blip)
    assert reasons(climber) == []


def test_jump_down_is_scaled_by_the_strength_of_the_degradation() -> None:
    jumps = []
    for strength in (1.0, 0.25):
        climber = hwsql()
        climber.reset({SIZE: 50})
        climber._up_strengths.append(0.5)  # an earlier upward move of strength 0.5
        climber._move(up=False, strength=strength)
        jumps.append(50 - climber._center)
    # 2 × magnitude (20) scaled by strength / mean upward strength, clamped to [0.5, 2].
    assert jumps == [40, 10]


def test_magnitudes_are_scaled_to_the_host() -> None:
    big = HwsqlClimber(size_space(72), 72)
    small = HwsqlClimber(size_space(8), 8)
    assert (big.min_magnitude, big.eps, big.min_throughput) == (10, 5.0, 300.0)
    assert big.max_magnitude == 63  # 80, capped at half the 1…128 range
    assert (small.min_magnitude, small.eps) == (1, 1.0)
    assert small.max_magnitude >= 4 * small.min_magnitude
    assert small.min_throughput == pytest.approx(300 * 8 / 72)


def test_first_harmonic_matches_a_pure_wave() -> None:
    wave = [1.0, 1.0, -1.0, -1.0] * 4
    assert abs(first_harmonic(wave, 4)) == pytest.approx(0.7071, abs=1e-3)
    shifted = [1.0, 1.0, -1.0, -1.0] * 4
    ratio = first_harmonic(shifted, 4) / first_harmonic(wave, 4)
    assert ratio.real == pytest.approx(1.0)
