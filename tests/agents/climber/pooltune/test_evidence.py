"""The pooltune climber's evidence: levels per tuple, the noise, the comparison test, and
what makes it robust (an outlier never decides, stalls are set aside, drift is paired out)."""

from __future__ import annotations

import math
import random

import pytest

from agents.climber import PooltuneConfig
from agents.climber.pooltune.change import moved
from agents.climber.pooltune.evidence import Evidence, Rules, Verdict

SIZE = "thread_pool_size"


def levels(mean: float, count: int, *, cv: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [math.log(mean * (1 + rng.gauss(0, cv))) for _ in range(count)]


def record(evidence: Evidence, knobs: dict[str, int], values: list[float]) -> None:
    """One visit: ``values`` (throughputs) at ``knobs``, one step each."""
    for value in values:
        evidence.now += 1
        evidence.record(knobs, math.log(value), None)


def test_a_clear_gain_and_a_clear_loss_are_told_at_once() -> None:
    evidence = Evidence(PooltuneConfig())
    reference = levels(100, 2, cv=0.01, seed=1)
    assert evidence.compare(reference, levels(130, 2, cv=0.01, seed=2), final=False) == (
        Verdict.BETTER,
        False,
    )
    assert evidence.compare(reference, levels(70, 2, cv=0.01, seed=3), final=False) == (
        Verdict.WORSE,
        False,
    )


def test_one_outlier_never_decides_a_probe() -> None:
    """A probe twice as good, one of whose two samples stalled (×0.2): the stall alone
    must not make it lose, and the good sample alone must not make it win; once the gain
    holds without any one sample, the robust estimate tells."""
    evidence = Evidence(PooltuneConfig())
    reference = [math.log(100.0)] * 4
    stalled = [math.log(200.0), math.log(40.0)]
    assert evidence.compare(reference, stalled, final=False).verdict is Verdict.UNSURE
    # The other way round: a reference stall must not make an equal probe win.
    assert (
        evidence.compare(
            [math.log(100.0)] * 3 + [math.log(20.0)], [math.log(100.0)] * 2, final=False
        ).verdict
        is not Verdict.BETTER
    )
    three = stalled + [math.log(205.0)]
    assert evidence.compare(reference, three, final=False).verdict is Verdict.UNSURE
    four = three + [math.log(198.0)]
    assert evidence.compare(reference, four, final=False).verdict is Verdict.BETTER


def test_a_stall_the_target_flagged_is_set_aside_while_it_is_a_minority() -> None:
    evidence = Evidence(PooltuneConfig())
    knobs = {SIZE: 4}
    for value, stalled in ((100.0, False), (20.0, True), (102.0, False)):
        evidence.now += 1
        evidence.record(knobs, math.log(value), None, stalled)
    assert evidence.recent(knobs) == pytest.approx([math.log(100.0), math.log(102.0)])
    # A tuple that stalls most of the time stalls: its stalls are its behaviour.
    busy = {SIZE: 1}
    for value, stalled in ((100.0, False), (10.0, True), (12.0, True)):
        evidence.now += 1
        evidence.record(busy, math.log(value), None, stalled)
    assert len(evidence.recent(busy)) == 3


def test_a_tie_needs_enough_samples_to_be_shown() -> None:
    evidence = Evidence(PooltuneConfig())
    reference, probe = levels(100, 6, cv=0.01, seed=4), levels(100, 6, cv=0.01, seed=5)
    # Two samples each: the prior noise leaves the test too blunt to call a tie.
    assert evidence.compare(reference[:2], probe[:2], final=False).verdict is Verdict.UNSURE
    assert evidence.compare(reference, probe, final=False) == (Verdict.EQUAL, False)


def test_the_sample_cap_forces_a_verdict() -> None:
    evidence = Evidence(PooltuneConfig())
    reference = [math.log(100.0)] * 2
    slightly_lower = [math.log(99.0)] * 2
    assert evidence.compare(reference, slightly_lower, final=False).verdict is Verdict.UNSURE
    assert evidence.compare(reference, slightly_lower, final=True) == (Verdict.EQUAL, True)
    # A smaller pool below the core count must not have measured lower.
    prove = Rules(prove_tie=True)
    assert evidence.compare(reference, slightly_lower, final=True, rules=prove) == (
        Verdict.WORSE,
        True,
    )
    # Where ties keep the current value, an unproven gain must be twice epsilon.
    higher = [math.log(104.0)] * 2
    assert evidence.compare(reference, higher, final=True).verdict is Verdict.BETTER
    stay = Rules(stay=True)
    assert evidence.compare(reference, higher, final=True, rules=stay).verdict is Verdict.EQUAL


def test_a_tie_for_thread_economy_must_be_shown() -> None:
    """A smaller pool ties with the best only if its loss plus ``shown_tie_z`` standard
    errors stays inside the tolerance: a loss the noise merely fails to rule out is no tie."""
    evidence = Evidence(PooltuneConfig())
    rng = random.Random(8)
    for visit in range(8):  # the run's own noise: 1%
        record(evidence, {SIZE: 32 + visit}, [100 * (1 + rng.gauss(0, 0.01)) for _ in range(6)])
    reference = levels(100, 10, cv=0.01, seed=8)
    close, far = levels(99.5, 10, cv=0.01, seed=9), levels(97, 10, cv=0.01, seed=10)
    shown = Rules(loss_tolerance=0.045, shown_tie_z=1.5)
    assert evidence.compare(reference, close, final=True, rules=shown).verdict is Verdict.EQUAL
    assert evidence.compare(reference, far, final=True, rules=shown).verdict is Verdict.WORSE
    unshown = Rules(loss_tolerance=0.045)
    assert evidence.compare(reference, far, final=True, rules=unshown).verdict is Verdict.EQUAL


def test_the_noise_is_learnt_from_the_runs_own_samples_and_ignores_stalls() -> None:
    evidence = Evidence(PooltuneConfig())
    prior = evidence.noise()
    assert prior == pytest.approx(math.sqrt(math.log1p(0.05**2)) * 1.3)
    rng = random.Random(11)
    for visit in range(12):
        record(evidence, {SIZE: 4 + visit % 2}, [100 * (1 + rng.gauss(0, 0.2)) for _ in range(3)])
    noisy = evidence.noise()
    assert noisy > 2 * prior
    # The same Gaussian noise with a stall in every fourth visit: the estimate barely moves.
    stalls = Evidence(PooltuneConfig())
    rng = random.Random(11)
    for visit in range(12):
        values = [100 * (1 + rng.gauss(0, 0.2)) for _ in range(3)]
        if visit % 4 == 0:
            values[1] *= 0.2
        record(stalls, {SIZE: 4 + visit % 2}, values)
    assert stalls.noise() < 1.5 * noisy


def test_comparisons_pair_each_visit_with_the_reference_around_it() -> None:
    """The server drifts up 1% per sample; the probe equals the reference at every moment.
    Compared visit by visit with the reference's visits around it (A/B/A/B/A), the drift
    cancels; the two whole means would differ by the drift between their times."""
    evidence = Evidence(PooltuneConfig())
    reference, probe = {SIZE: 8}, {SIZE: 4}
    for knobs, count in ((reference, 6), (probe, 3), (reference, 3)):
        record(evidence, knobs, [100 * 1.01 ** (evidence.now + i) for i in range(1, count + 1)])
    paired, _ = evidence.difference(reference, probe)
    assert abs(paired) < 0.005
    plain = evidence.location(evidence.recent(probe)) - evidence.location(
        evidence.recent(reference)
    )
    assert abs(plain) > 0.02


def test_drift_faster_than_a_visit_widens_the_standard_error() -> None:
    """A host whose level swings by ±8% from one 10-s visit to the next while each visit is
    steady (live PgBouncer at 256 clients: 6.0–8.0k tps within a minute at one size): pairing
    visits cannot cancel that, and a tie "shown" against the within-visit noise would be
    luck. The pairs' own scatter sets the standard error where it is the wider."""
    evidence = Evidence(PooltuneConfig())
    reference, probe = {SIZE: 88}, {SIZE: 50}
    swings = [1.0, 1.08, 0.92, 1.08, 0.92, 1.0, 1.08, 0.92, 1.0]
    steady = [1.0, 1.002, 0.998, 1.001, 0.999]
    for visit, swing in enumerate(swings):
        knobs = reference if visit % 2 == 0 else probe
        record(evidence, knobs, [7000 * swing * x for x in steady])
    difference, stderr = evidence.difference(reference, probe)
    model = evidence.noise() * math.sqrt(1 / 25 + 1 / 20)
    assert stderr > 3 * model
    assert stderr > 0.02
    assert (
        evidence.compare(
            evidence.readings(reference),
            evidence.readings(probe),
            final=False,
            rules=Rules(loss_tolerance=0.045, shown_tie_z=0.75),
        ).verdict
        is not Verdict.EQUAL
    )


def test_only_recent_samples_count() -> None:
    config = PooltuneConfig(recent_window=30)
    evidence = Evidence(config)
    knobs = {SIZE: 8}
    evidence.now = 1
    evidence.record(knobs, 1.0, cpu_busy=3.0)
    evidence.now = 30
    evidence.record(knobs, 2.0, cpu_busy=float("nan"))
    assert evidence.recent(knobs) == [1.0, 2.0]  # the last 30 steps
    assert evidence.signal("cpu", knobs) == 3.0  # a CPU reading that is not a number is skipped
    evidence.now = 31
    assert evidence.recent(knobs) == [2.0]
    assert evidence.signal("cpu", knobs) == 0.0
    evidence.forget()
    assert evidence.recent(knobs) == []


def test_a_stall_is_floored_at_a_share_of_the_reference() -> None:
    evidence = Evidence(PooltuneConfig(stall_level=0.1))
    reference = [math.log(100.0)] * 3
    assert evidence.level(0.0, reference) == pytest.approx(math.log(10.0))
    assert evidence.level(50.0, reference) == pytest.approx(math.log(50.0))
    assert evidence.level(0.0, []) is None
    assert evidence.level(50.0, []) == pytest.approx(math.log(50.0))


def test_two_samples_far_below_the_best_are_a_sharp_drop() -> None:
    evidence = Evidence(PooltuneConfig(rollback_drop=0.15))
    best, probe = {SIZE: 8}, {SIZE: 2}
    record(evidence, best, [100.0, 101.0, 100.0])
    record(evidence, probe, [92.0])
    assert not evidence.sharp_drop(probe, best)  # one sample is not enough
    record(evidence, probe, [80.0])
    assert not evidence.sharp_drop(probe, best)  # the last two: 92 (inside) and 80
    record(evidence, probe, [81.0])
    assert evidence.sharp_drop(probe, best)
    assert not evidence.sharp_drop(best, best)
    # A best that stalled once itself: its stall does not hide a drop (a stall-heavy IO
    # load ran a probe at 0.42 of the best for eight samples while its best's samples
    # held a stall at 0.18), but a probe inside the best's own spread is not one.
    stalls = Evidence(PooltuneConfig(rollback_drop=0.15))
    record(stalls, best, [100.0, 30.0, 100.0, 84.0, 100.0])
    record(stalls, probe, [83.0, 83.0])
    assert not stalls.sharp_drop(probe, best)
    record(stalls, probe, [80.0, 81.0])
    assert stalls.sharp_drop(probe, best)


def test_a_stall_of_the_best_does_not_hide_a_probe_that_collapsed() -> None:
    evidence = Evidence(PooltuneConfig())
    best, probe = {SIZE: 8}, {SIZE: 1}
    record(evidence, best, [100.0, 18.0, 101.0, 99.0, 100.0])
    record(evidence, probe, [40.0])
    assert evidence.collapsed(math.log(60.0), probe, best)
    assert evidence.stalls_seen()  # the one more look a stalling server gets still follows


def test_a_reference_that_moved_between_visits_is_a_workload_change() -> None:
    evidence = Evidence(PooltuneConfig())
    best, probe = {SIZE: 8}, {SIZE: 16}
    record(evidence, best, [100.0, 102.0, 99.0])
    record(evidence, probe, [90.0, 91.0, 92.0])
    record(evidence, best, [101.0, 100.0])
    assert moved(evidence, best) is None  # the same level
    record(evidence, probe, [91.0, 90.0])
    record(evidence, best, [55.0, 56.0])
    move = moved(evidence, best)
    assert move is not None and move.shift < 0
    assert move.reason == f"throughput at {best} fell between visits during the search"
    # One low sample of two is not a change.
    quiet = Evidence(PooltuneConfig())
    record(quiet, best, [100.0, 102.0, 99.0, 101.0])
    record(quiet, probe, [90.0, 91.0])
    record(quiet, best, [100.0, 55.0])
    assert moved(quiet, best) is None


def test_the_second_look_at_a_probe_that_collapsed_leaves_on_its_first_sample() -> None:
    """The first look at a probe is left on its first sample only if the blended sample
    before it agrees; the one more look after a collapse is left on its first sample alone
    (the first collapse is the second witness), even though the probe has samples already."""
    evidence = Evidence(PooltuneConfig())
    best, probe = {SIZE: 8}, {SIZE: 1}
    record(evidence, best, [100.0, 102.0, 99.0])
    record(evidence, probe, [20.0])
    assert evidence.collapsed(math.log(60.0), probe, best)
    assert not evidence.collapsed(math.log(100.0), probe, best)  # the blend says no
    record(evidence, probe, [21.0])
    record(evidence, best, [101.0, 100.0])
    record(evidence, probe, [22.0])
    assert not evidence.collapsed(math.log(100.0), probe, best)
    assert evidence.collapsed(math.log(100.0), probe, best, again=True)
    record(evidence, probe, [23.0])  # a second sample of the visit: not the first any more
    assert not evidence.collapsed(math.log(100.0), probe, best, again=True)
