"""The pooltune climber end to end: answers on known curves, economy, rollback, change
detection, drift tolerance, warm start, tuple climbing, manual changes, suspension."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from agents.climber import EventKind, KnobSpace, PooltuneClimber, Sample
from agents.sim import KneeCurve, NoiseConfig, SimWorkload, ThroughputCurve, UslCurve, WorkloadCurve
from agents.sim.curves import knee_size, optimum_size
from benchmarks.climb import t95
from tests.agents.climber.helpers import SIZE, MeasuredCurve, drive, new

OVERSUBSCRIBE = "thread_pool_oversubscribe"
STALL = "thread_pool_stall_limit"


def pooltune(cpus: int = 8, space: KnobSpace | None = None, /, **config: float) -> PooltuneClimber:
    climber = new("pooltune", cpus, space, **config)
    assert isinstance(climber, PooltuneClimber)
    return climber


def kinds(climber: PooltuneClimber) -> list[EventKind]:
    return [e.kind for e in climber.events]


@pytest.mark.parametrize("start", [1, 8, 128])
def test_finds_the_peak_of_a_rise_then_fall_curve_from_either_side(start: int) -> None:
    """From a cold start the climber ends at the smallest size within ε of the best it
    measured (thread economy), and a probe it cannot tell at once is measured again against
    fresh samples of the best (A/B/A): measured, T95 19, 15 and 68 from 1, 8 and 128."""
    curve = UslCurve.with_peak_at(24, connections=1000, cores=8)
    climber = pooltune()
    run = drive(climber, curve, start={SIZE: start}, samples=150)
    assert climber.converged and climber.state == "hold"
    peak = curve.peak()
    assert curve.expected(climber.best_tuple)[0] >= 0.95 * peak
    assert t95(np.asarray(run.expected) / peak) <= 80


def test_while_searching_the_best_tuple_is_the_best_measured_not_the_start() -> None:
    """The agent rolls back to ``best_tuple`` on a sustained drop and holds it when a climb
    runs out of time. Live (io_bound x 64 from 63, searching at 3-5 near the best 4), the
    start was still the "best" and a stall burst at a probe sent the server back to 63."""
    curve = UslCurve.with_peak_at(6, connections=1000, cores=2)
    climber = pooltune(2)
    run = drive(climber, curve, start={SIZE: 64}, samples=40)
    assert not climber.converged
    best = climber.best_tuple
    assert best[SIZE] < 64
    assert curve.expected(best)[0] > 1.2 * curve.expected({**best, SIZE: 64})[0]
    # The best measured so far: no tuple in force yet did clearly better than it.
    assert curve.expected(best)[0] >= 0.9 * max(run.expected)


def test_prefers_the_smallest_size_on_a_plateau() -> None:
    curve = KneeCurve(rate=1000, knee_size=12, sharpness=5, connections=1000, cores=8)
    climber = pooltune()
    drive(climber, curve, start={SIZE: 100}, samples=200)
    final = climber.best_tuple[SIZE]
    assert knee_size(curve) <= final <= 1.25 * knee_size(curve)


def test_discards_the_sample_after_each_change() -> None:
    curve = UslCurve.with_peak_at(24, connections=1000, cores=8)
    climber = pooltune()
    changed_at: list[int] = []

    def poison_lag(index: int, sample: Sample) -> Sample:
        # The sample right after a change is garbage; a climber that used it would move
        # to wherever the garbage points.
        if changed_at and changed_at[-1] == index:
            return replace(sample, throughput=sample.throughput * 0.01)
        return sample

    previous: dict[str, int] = {}

    def track(index: int, server: object) -> None:
        nonlocal previous
        if climber.current_tuple != previous:
            changed_at.append(index)
            previous = climber.current_tuple

    drive(climber, curve, start={SIZE: 4}, samples=150, hook=track, sample_filter=poison_lag)
    assert curve.expected(climber.best_tuple)[0] >= 0.97 * curve.peak()
    # The garbage sample never caused a rollback: any there was left a tuple truly 15% low.
    for event in climber.events:
        if event.kind is EventKind.ROLLBACK:
            assert curve.expected(event.knobs)[0] < 0.85 * curve.peak()


def climb_a_slowly_opening_pool(
    *, flagged: bool, always: bool = False, seed: int = 0, samples: int = 150
) -> tuple[int, int]:
    """A pool that opens 4 connections per sample after it grows (PgBouncer opens them a few
    at a time), on a curve rising in proportion to the pool up to its 128 clients; the target
    flags the samples taken while it opens when ``flagged`` (every sample when ``always``).
    Returns the size held after ``samples`` and the workload changes the climber saw."""
    curve = KneeCurve(rate=4800, knee_size=128, sharpness=30, connections=128, cores=2)
    rng = np.random.default_rng(seed)
    climber = pooltune(2)
    climber.reset({SIZE: 20})
    knobs = climber.current_tuple
    opened = knobs[SIZE]
    for _ in range(samples):
        before, wanted = opened, knobs[SIZE]
        opened = wanted if wanted <= opened else min(wanted, opened + 4)
        effective = (before + opened) / 2
        throughput = curve.expected({SIZE: round(effective)})[0] * (1 + rng.normal(0, 0.01))
        settling = (always or opened > before) if flagged else None
        knobs = climber.step(Sample(throughput, 128, None, dict(knobs), settling=settling))
    # Unflagged, the opening reads as workload changes that restart the climb, each of them
    # before the size is located: such a run may still be searching.
    assert climber.converged or not flagged
    changes = sum(e.kind is EventKind.WORKLOAD_CHANGE for e in climber.events)
    return climber.best_tuple[SIZE], changes


@pytest.mark.parametrize("seed", range(3))
def test_samples_of_a_pool_still_opening_are_not_taken_for_its_size(seed: int) -> None:
    # Measured while it opens, 128 looks worse than it is (the live pg_sleep × 128 run held
    # 114) and its level rises later, which reads as a workload change; flagged samples
    # are discarded, so it holds 128 with no false change. Unflagged, the opening misleads
    # the climb: a false change, or a smaller size held.
    assert climb_a_slowly_opening_pool(flagged=True, seed=seed) == (128, 0)
    assert climb_a_slowly_opening_pool(flagged=False, seed=seed) != (128, 0)


def test_a_target_that_always_says_settling_does_not_stop_the_climb() -> None:
    # The discard is bounded per change: a flag stuck on costs time, not the climb.
    assert climb_a_slowly_opening_pool(flagged=True, always=True, samples=300)[0] >= 100


def test_rolls_back_at_once_when_a_probe_collapses() -> None:
    # A cliff: any size above 10 collapses throughput to 10%.
    base = UslCurve.with_peak_at(8, connections=1000, cores=8)

    class Cliff:
        connections, max_size, cores = 1000, 128, 8

        def expected(self, knobs: dict[str, int]) -> tuple[float, float]:
            value, latency = base.expected(knobs)
            return (value * (0.1 if knobs[SIZE] > 10 else 1.0), latency)

        def curve(self, sizes: object = None) -> object:
            return base.curve()

        def peak(self) -> float:
            return base.peak()

    climber = pooltune()
    run = drive(climber, Cliff(), start={SIZE: 8}, samples=60)  # type: ignore[arg-type]
    assert EventKind.ROLLBACK in kinds(climber)
    # Never more than lag + 2 samples in a row on the cliff.
    streak = longest = 0
    for size in run.sizes:
        streak = streak + 1 if size > 10 else 0
        longest = max(longest, streak)
    assert longest <= 3
    assert climber.best_tuple[SIZE] <= 10


def test_detects_a_workload_change_and_climbs_again() -> None:
    first = UslCurve.with_peak_at(8, connections=1000, cores=8)
    second = UslCurve.with_peak_at(48, rate=3000.0, connections=1000, cores=8)

    def switch(index: int, server: object) -> None:
        if index == 150:
            server.switch_workload(second)  # type: ignore[attr-defined]

    qualities = []
    for seed in range(5):
        climber = pooltune()
        run = drive(
            climber,
            first,
            start={SIZE: 8},
            samples=300,
            hook=switch,
            noise=NoiseConfig(cv=0.05),
            seed=seed,
        )
        changes = [e.step for e in climber.events if e.kind is EventKind.WORKLOAD_CHANGE]
        # The switch is seen within 15 samples (a false restart before it is counted by
        # benchmarks.climb, not here: rare, but one of these seeds has one).
        assert [step for step in changes if step > 150][0] <= 165
        after = np.asarray(run.expected[150:]) / second.peak()
        # Climbed from 8 (0.42 of the new peak) to the new plateau within 60 samples; the
        # economy tie (4.5%) may stop it just short of 95%, so 90% is the bar per seed.
        assert np.mean(after[60:]) >= 0.9
        assert climber.converged
        qualities.append(float(np.mean(after[60:])))
    assert np.median(qualities) >= 0.93


def test_drift_is_not_mistaken_for_a_workload_change() -> None:
    curve = UslCurve.with_peak_at(16, connections=1000, cores=8)
    restarts = []
    for seed in range(3):
        climber = pooltune()
        drive(
            climber,
            curve,
            start={SIZE: 8},
            samples=1800,  # one hour of 2-second samples
            seed=seed,
            noise=NoiseConfig(cv=0.05, drift=0.2, drift_period=900),
        )
        restarts.append(climber.restarts())
    assert max(restarts) <= 1


def test_warm_start_reaches_95_percent_within_10_samples() -> None:
    rng = np.random.default_rng(7)
    reached = []
    for seed in range(15):
        curve = UslCurve.with_peak_at(float(rng.uniform(6, 60)), connections=1000, cores=8)
        optimum = optimum_size(curve)
        start = max(1, round(optimum * rng.uniform(0.7, 1.3)))
        climber = pooltune()
        run = drive(
            climber,
            curve,
            start={SIZE: start},
            samples=80,
            seed=seed,
            noise=NoiseConfig(cv=0.05),
            plausible_range={SIZE: (max(1, round(start / 1.5)), round(start * 1.5))},
        )
        reached.append(t95(np.asarray(run.expected) / curve.peak()))
    assert statistics.median(reached) <= 10


def test_tuple_climbing_moves_size_first_then_oversubscribe_then_stall_limit() -> None:
    # IO-bound with announced waits on 32 cores: size is capped at 128, so extra active
    # threads per group (oversubscribe) are what is left to gain.
    workload = SimWorkload(
        cores=32, connections=2000, cpu_ms=0.5, io_ms=10.0, signalled_fraction=0.8, coherency=1e-6
    )
    curve = WorkloadCurve(workload)
    space = KnobSpace.from_engine("mariadb", 32)
    climber = pooltune(32, space)
    run = drive(climber, curve, start=space.defaults(), samples=200)
    first_change: dict[str, int] = {}
    for index in range(1, len(run.tuples)):
        for name in (SIZE, OVERSUBSCRIBE, STALL):
            if run.tuples[index][name] != run.tuples[index - 1][name]:
                first_change.setdefault(name, index)
    assert first_change[SIZE] < first_change[OVERSUBSCRIBE] < first_change[STALL]
    assert climber.best_tuple[OVERSUBSCRIBE] > 3
    assert (
        curve.expected(climber.best_tuple)[0]
        > 1.03 * curve.expected({**climber.best_tuple, OVERSUBSCRIBE: 3})[0]
    )


def test_knobs_without_effect_stay_at_their_defaults() -> None:
    curve = UslCurve.with_peak_at(24, connections=1000, cores=8)
    space = KnobSpace.from_engine("mariadb", 8)
    climber = pooltune(8, space)
    drive(climber, curve, start=space.defaults(), samples=200)
    assert climber.best_tuple[OVERSUBSCRIBE] == 3
    assert climber.best_tuple[STALL] == 500


def test_manual_change_restarts_from_the_operators_value() -> None:
    curve = UslCurve.with_peak_at(24, connections=1000, cores=8)
    climber = pooltune()

    def operator(index: int, sample: Sample) -> Sample:
        return replace(sample, knobs={SIZE: 60}) if index == 100 else sample

    run = drive(climber, curve, start={SIZE: 8}, samples=101, sample_filter=operator)
    assert kinds(climber)[-1] is EventKind.MANUAL_CHANGE
    assert not climber.converged
    assert run.sizes[-1] != 60 or climber.current_tuple[SIZE] != 60


def test_suspends_without_connections() -> None:
    curve = UslCurve.with_peak_at(24, connections=1000, cores=8)
    climber = pooltune()

    def idle(index: int, sample: Sample) -> Sample:
        return replace(sample, connections=0, throughput=0.0) if 20 <= index < 30 else sample

    run = drive(climber, curve, start={SIZE: 8}, samples=40, sample_filter=idle)
    assert len(set(run.sizes[21:31])) == 1
    assert EventKind.SUSPENDED in kinds(climber) and EventKind.RESUMED in kinds(climber)


def test_a_stalling_pool_size_is_left_not_mistaken_for_an_idle_server() -> None:
    """An IO-bound server whose pool is too small stalls: every other 2-s sample at size 1
    commits nothing while 64 clients wait (seen on the 2-core test server). Those samples
    count against the size (at a tenth of the best level) instead of suspending the climb,
    which would leave the agent at size 1 for the whole run."""
    curve = KneeCurve(rate=400.0, knee_size=6.0, sharpness=4.0, connections=64, cores=2)
    climber = pooltune(2)

    def stalls(index: int, sample: Sample) -> Sample:
        stalled = sample.knobs[SIZE] == 1 and index % 2 == 1
        return replace(sample, throughput=0.0) if stalled else sample

    run = drive(
        climber,
        curve,
        start={SIZE: 1},
        samples=120,
        plausible_range={SIZE: (1, 4)},
        sample_filter=stalls,
    )
    assert EventKind.SUSPENDED not in kinds(climber)
    assert climber.best_tuple[SIZE] >= 4
    assert min(run.sizes[60:]) >= 3


def test_suspends_when_connections_stay_but_nothing_runs() -> None:
    """Connections open but no throughput for three samples in a row: the load is gone (idle
    clients), nothing to climb on."""
    curve = UslCurve.with_peak_at(24, connections=1000, cores=8)
    climber = pooltune()

    def idle(index: int, sample: Sample) -> Sample:
        return replace(sample, throughput=0.0) if 20 <= index < 30 else sample

    run = drive(climber, curve, start={SIZE: 8}, samples=40, sample_filter=idle)
    assert len(set(run.sizes[23:31])) == 1
    assert EventKind.SUSPENDED in kinds(climber) and EventKind.RESUMED in kinds(climber)


def test_cuts_a_pool_larger_than_the_connection_count() -> None:
    """Connections land in groups by their id modulo the size: more than twice as many
    groups as connections cannot help (twice: ids need not be consecutive)."""
    curve = KneeCurve(rate=1000, knee_size=4, connections=20, cores=2)
    climber = pooltune(2)
    run = drive(climber, curve, start={SIZE: 128}, samples=10)
    assert EventKind.GUARD in kinds(climber)
    assert max(run.sizes[5:]) <= 40


TWO_CORE_PLATEAU = KneeCurve(rate=1000.0, knee_size=2.0, sharpness=64.0, connections=64, cores=2)


def climb_from_cores(
    seed: int = 0,
    cpu_busy: Callable[[Sample], float] | None = None,
    lock_waits: float | None = None,
    curve: ThroughputCurve = TWO_CORE_PLATEAU,
    samples: int = 300,
    cores: int = 2,
) -> tuple[PooltuneClimber, list[int]]:
    """A climber on ``curve`` from size ``cores`` (2 unless told) for ``samples``;
    ``cpu_busy`` gives the server's CPU cores per sample (None: the agent cannot read them),
    every sample shows ``lock_waits`` row-lock waits per statement."""
    climber = pooltune(cores)
    run = drive(
        climber,
        curve,
        start={SIZE: cores},
        samples=samples,
        noise=NoiseConfig(cv=0.05),
        seed=seed,
        sample_filter=(
            None
            if cpu_busy is None
            else lambda _, sample: replace(sample, cpu_busy=cpu_busy(sample), lock_waits=lock_waits)
        ),
    )
    return climber, run.sizes


#: Four cores, CPU-bound from four groups up: three groups leave a core idle (0.75).
FOUR_CORE_PLATEAU = KneeCurve(rate=1000.0, knee_size=4.0, sharpness=64.0, connections=64, cores=4)


def four_busy_cores(sample: Sample) -> float:
    """The server keeps 3.9 cores busy from four groups up, one per group below."""
    return 3.9 if sample.knobs[SIZE] >= 4 else 0.98 * sample.knobs[SIZE]


def climb_four_cores(
    seed: int = 0,
    cpu_busy: Callable[[Sample], float] | None = None,
    lock_waits: float | None = None,
) -> tuple[PooltuneClimber, list[int]]:
    return climb_from_cores(
        seed, cpu_busy, lock_waits, curve=FOUR_CORE_PLATEAU, samples=200, cores=4
    )


def test_a_server_using_more_cores_than_a_smaller_pool_can_run_is_not_probed_there() -> None:
    curve = FOUR_CORE_PLATEAU
    assert curve.expected({SIZE: 3})[0] < 0.8 * curve.expected({SIZE: 4})[0]
    probed_three_without_cpu = guards = 0
    for seed in range(5):
        guarded, sizes = climb_four_cores(seed, four_busy_cores)
        assert min(sizes) >= 4
        guards += any(
            e.kind is EventKind.GUARD and "not probed" in e.reason for e in guarded.events
        )
        _, sizes = climb_four_cores(seed)
        probed_three_without_cpu += min(sizes) < 4
    # Without the server's CPU time the climber has to look (the guard is what spared it).
    assert probed_three_without_cpu >= 3
    assert guards >= probed_three_without_cpu


def test_a_pool_of_two_is_not_halved_blind() -> None:
    """One group instead of two may lose more than half where the threads wait off the CPU
    (replayed IO-bound sweeps: 0.15–0.33 of the best at one group, 0.56–0.78 at two): no
    probe is taken whose worst case (throughput in proportion to the pool) loses more than
    ``max_probe_loss``, rounded up — 2 × 0.6 is 1.2, and one group would halve it. Where
    statements queue on row locks the smaller pool may gain, and it is probed."""
    curve = MeasuredCurve(16, (1, 2, 4, 8, 16), (0.3, 1.0, 0.98, 0.96, 0.95))
    for seed in range(3):
        _, sizes = climb_from_cores(seed, cpu_busy=lambda sample: 0.9, curve=curve, samples=150)
        assert min(sizes) == 2
    _, sizes = climb_from_cores(
        cpu_busy=lambda sample: 0.9, lock_waits=0.74, curve=HOT_ROW_UPDATES_16, samples=150
    )
    assert min(sizes) == 1


def test_a_smaller_pool_is_taken_on_a_shown_tie_and_a_fresh_retest() -> None:
    """Thread economy walks down a plateau judging every smaller pool against the best
    size: it is taken only if its loss stays inside the tolerance by ``tie_z`` standard
    errors, and the smallest one taken must tie again on fresh samples (the walk keeps the
    probe that measured luckiest). The re-test keeps even a walk on unshown ties (``tie_z``
    0) above 95% of the peak on a gentle knee; the z buys the rest of the quality."""
    curve = KneeCurve(rate=1000, knee_size=10, sharpness=3.0, connections=1000, cores=4)

    def finals(**config: float) -> np.ndarray:
        shares = []
        for seed in range(20):
            climber = pooltune(4, **config)
            drive(
                climber,
                curve,
                start={SIZE: 128},
                samples=250,
                seed=seed,
                noise=NoiseConfig(cv=0.05),
            )
            shares.append(curve.expected(climber.best_tuple)[0] / curve.peak())
        return np.asarray(shares)

    shown, unshown = finals(), finals(tie_z=0.0)
    # Measured: 0 and 0 of 20 below 95% of the peak; mean 0.995 and 0.985 (before the
    # re-test: 1 and 7 of 20, mean 0.994 and 0.965).
    assert np.sum(shown < 0.95) <= 1 and np.sum(unshown < 0.95) <= 2
    assert shown.mean() > unshown.mean() + 0.005


def test_peak_distance_reads_the_scalability_law_from_a_rise_below() -> None:
    """The rise from size 1 to 2 tells how far up the peak lies: about right on the law
    without a serial part (its N(N − 1) term, read as N², overshoots by at most ×1.41, which
    costs a few percent at the peak), and nearer with one (the step stays short of it)."""
    from agents.climber.pooltune.line_search import peak_distance

    for peak_at in (2.0, 4.0, 10.0, 40.0):
        for serial in (0.0, 0.05):
            curve = UslCurve.with_peak_at(peak_at, serial_fraction=serial, connections=1000)
            gain = math.log(curve.expected({SIZE: 2})[0] / curve.expected({SIZE: 1})[0])
            distance = peak_distance(gain, 1.0)
            true = max(math.log2(optimum_size(curve) / 2.0), 0.0)
            assert distance <= true + 0.5, (peak_at, serial, distance, true)
            if serial == 0.0:
                assert distance >= true - 0.35, (peak_at, distance, true)
    assert peak_distance(0.0, 1.0) == 0.0


#: MariaDB under sysbench's IO-bound read-write load at 64 clients (2026-11-27): best at 4,
#: 0.64 at the default 2, and a shelf at 0.8–0.9 of the best from 11 up, where the
#: service's heuristic started the warm agents (11, 18, 52).
IO_BOUND_64 = MeasuredCurve(
    64, (1, 2, 4, 8, 16, 32, 128), (0.43, 0.64, 1.0, 0.96, 0.79, 0.87, 0.85)
)
#: Updates of a few hot rows at 16 clients (datasets/mariadb-2core-v2, hot_row_updates-c16):
#: one group is best, every larger pool loses a fifth to contention; the server used 1.36
#: cores at size 1 and 1.41 at 2 (background threads run outside the pool).
HOT_ROW_UPDATES_16 = MeasuredCurve(
    16, (1, 2, 3, 4, 8, 16, 64), (1.0, 0.78, 0.78, 0.78, 0.73, 0.72, 0.72)
)


def two_core_climbs(
    curve: ThroughputCurve,
    start: int,
    plausible: tuple[int, int] | None,
    *,
    seeds: int,
    cv: float,
    samples: int,
    sample_filter: Callable[[int, Sample], Sample] | None = None,
) -> list[PooltuneClimber]:
    """2-core climbers on ``curve`` from ``start``, one per seed: recommended with the
    ``plausible`` range, or cold (None)."""
    climbers = []
    for seed in range(seeds):
        climber = pooltune(2)
        drive(
            climber,
            curve,
            start={SIZE: start},
            samples=samples,
            seed=seed,
            noise=NoiseConfig(cv=cv),
            plausible_range={SIZE: plausible} if plausible else None,
            sample_filter=sample_filter,
        )
        climbers.append(climber)
    return climbers


@pytest.mark.parametrize("start", [18, 52])
def test_a_recommendation_far_above_a_peak_behind_a_shelf_is_left(start: int) -> None:
    """A recommended start on the shelf ties with its half, which the range alone would
    make a fence; from above twice the cores the climb keeps testing the cheap side down
    to the default, finds the gain and climbs down to the peak (the live warm agents held
    14–52 at 0.81–0.87 of the best while the cold ones reached 0.98–1.00)."""
    curve = IO_BOUND_64
    climbers = two_core_climbs(
        curve, start, (round(start / 1.5), round(start * 1.5)), seeds=6, cv=0.08, samples=200
    )
    finals = [curve.expected(climber.best_tuple)[0] / curve.peak() for climber in climbers]
    assert statistics.median(finals) >= 0.95, finals


def test_statements_queueing_on_row_locks_lift_the_cpu_guard() -> None:
    """The server keeps 1.4 cores busy at 2 groups, yet one group wins: most statements wait
    on a row lock (0.74 waits per statement, as measured), so the CPU is not all useful
    work and the smaller pool is probed and kept."""
    finals = [
        climb_from_cores(
            seed,
            cpu_busy=lambda sample: 1.36 if sample.knobs[SIZE] == 1 else 1.41,
            lock_waits=0.74,
            curve=HOT_ROW_UPDATES_16,
            samples=150,
        )[0].best_tuple[SIZE]
        for seed in range(4)
    ]
    assert finals.count(1) >= 3, finals


def test_a_few_lock_waits_leave_the_cpu_guard_in_place() -> None:
    """One statement in twenty waiting on a lock (sysbench's hot rows at 0.06, where one
    group loses 4–10%) is ordinary write contention: on a CPU-bound plateau the guard still
    spares the probe of fewer groups than the cores."""
    climber, sizes = climb_four_cores(cpu_busy=four_busy_cores, lock_waits=0.06)
    assert min(sizes) == 4
    assert any(e.kind is EventKind.GUARD and "not probed" in e.reason for e in climber.events)


@pytest.mark.parametrize("start", [3, 4])
def test_a_recommendation_whose_half_ties_lets_the_economy_walk_look_below(start: int) -> None:
    """Live, the model recommended 3–4 groups for hot-row updates whose best is one: the
    start tied with its half (2) and, the range taken as the smallest size near the best,
    the climb held 2–3 at 0.80–0.84 while the cold agents reached one. A tie at half the
    recommendation is a plateau seen: the economy walk looks below."""
    climbers = two_core_climbs(
        HOT_ROW_UPDATES_16,
        start,
        (2, 2 * start),
        seeds=4,
        cv=0.05,
        samples=150,
        sample_filter=lambda _, sample: replace(
            sample, cpu_busy=1.36 if sample.knobs[SIZE] == 1 else 1.41, lock_waits=0.74
        ),
    )
    finals = [climber.best_tuple[SIZE] for climber in climbers]
    assert finals.count(1) >= 3, finals


def test_a_recommendation_on_a_shelf_walked_down_to_a_knee_lets_the_economy_walk_run() -> None:
    """Live, PgBouncer select-only × 128 on 2 cores (best 8, 4 at 0.94, 2 at 0.79) started
    at the heuristic's 20: the walk down tied at 12, 7 and 4 and lost at 2, and the range
    held 20 (5× the smallest tied size) with no economy walk, as if the start were the
    smallest size near the best. Sizes that tied on the way down are a shelf seen."""
    curve = KneeCurve(rate=21000.0, knee_size=4.0, sharpness=4.0, connections=128, cores=2)
    climbers = two_core_climbs(curve, 20, (10, 40), seeds=8, cv=0.06, samples=300)
    finals = [climber.best_tuple[SIZE] for climber in climbers]
    assert statistics.median(finals) <= 12 and max(finals) < 20, finals


#: sysbench oltp_read_only at 64 clients (datasets/mariadb-2core-v2): best at 2–6 groups, a
#: dip of 10–16% from 8 to 32, and 0.95 again at 64 and above.
READ_ONLY_64 = MeasuredCurve(
    64,
    (1, 2, 3, 4, 6, 8, 16, 32, 64, 128),
    (0.71, 1.0, 0.96, 0.99, 1.0, 0.9, 0.85, 0.84, 0.95, 0.95),
)


def test_a_pool_set_far_above_the_cores_is_verified_down_past_a_dip() -> None:
    """A cold start at the catalog's top (a DBA's 128 on 2 cores) is a guess, as a
    recommendation is: the climb walks down past the dip (each step loses less than a
    knee's fall) to twice the cores, finds the gain there and ends on the small sizes'
    peak, where the line search alone stopped at the dip's edge (77)."""
    climbers = two_core_climbs(READ_ONLY_64, 128, None, seeds=16, cv=0.05, samples=300)
    finals = [climber.best_tuple[SIZE] for climber in climbers]
    quality = [READ_ONLY_64.expected({SIZE: size})[0] / READ_ONLY_64.peak() for size in finals]
    # Measured: 9 of 16 past the dip, the worst run at 0.90 (before the walk's steps were
    # bounded: 11, and 0.89). The dip's 12% reads 15–16% in some runs, and the bound then
    # ends the walk at its edge.
    assert statistics.median(finals) <= 8 and min(quality) >= 0.9, finals


#: PgBouncer select-only at 32 clients on 2 cores, live (2026-12-05, the host saturated at
#: every size): a knee whose fall steepens below 12.
SELECT_ONLY_32 = MeasuredCurve(
    32, (2, 4, 8, 12, 20, 32, 64, 128), (0.66, 0.77, 0.91, 0.955, 1.0, 0.96, 0.975, 0.99)
)


def test_a_walk_down_a_knees_fall_keeps_its_steps_loss_bounded() -> None:
    """From the heuristic's 20 the walk down verifying the start went 12, 7, 5 and 3 live,
    each probe losing more than the last, and 3 cost a quarter of the throughput (worst
    10 s 0.77 of the start, the server alone 0.96). Once a probe has lost, the next step
    is no longer than keeps the loss within ``rollback_drop`` at the slope seen so far:
    every run's worst 10 s stays at 0.8 of its start (0.70 in the worst run before)."""
    safeties = []
    for seed in range(20):
        climber = pooltune(2)
        run = drive(
            climber,
            SELECT_ONLY_32,
            start={SIZE: 20},
            samples=150,
            seed=seed,
            noise=NoiseConfig(cv=0.04),
            plausible_range={SIZE: (10, 40)},
            sample_filter=lambda _, sample: replace(sample, cpu_busy=1.95),
        )
        expected = run.expected
        worst = min(statistics.fmean(expected[i : i + 5]) for i in range(len(expected) - 4))
        safeties.append(worst / expected[0])
    assert min(safeties) >= 0.8, sorted(safeties)[:3]


def test_the_smallest_tie_is_re_tested_after_the_walks_budget_while_time_remains() -> None:
    """A walk cut short by its budget still re-tests the smallest size it accepted when the
    climb has time left to settle, rather than backing off to a larger one unseen: with a
    budget of 20 steps the walk ends near the knee, quality kept."""
    curve = KneeCurve(rate=1000, knee_size=10, sharpness=3.0, connections=1000, cores=4)
    sizes, shares = [], []
    for seed in range(20):
        climber = pooltune(4, economy_budget=20)
        drive(climber, curve, start={SIZE: 128}, samples=250, seed=seed, noise=NoiseConfig(cv=0.05))
        sizes.append(climber.best_tuple[SIZE])
        shares.append(curve.expected(climber.best_tuple)[0] / curve.peak())
    # Measured: median 41, worst share 0.94 (backing off at the budget: median 63).
    assert np.median(sizes) <= 50
    assert min(shares) >= 0.93


#: PgBouncer, ``pg_sleep(20 ms)`` × 128 clients on 2 cores, live (2026-12-07): a rise that
#: flattens as the cores fill, 0.97 at 112 and 0.92 at 87 of 128's throughput (the sweep
#: measured 20 and above; below 20 the rise is taken in proportion to the pool).
SLEEP_20MS_128 = MeasuredCurve(128, (2, 20, 32, 64, 128), (0.031, 0.313, 0.490, 0.855, 1.0))


def test_a_tie_kept_below_a_larger_size_leaves_the_economy_walk_less() -> None:
    """Live, the line search kept 112 level with 128 (a loss inside ε) and the economy walk
    then took 87 level with 112 (a loss inside its own tolerance): 0.92 of the best. A
    larger size level with the best that measured above it takes what it measured above
    from the walk's tolerance, so the two losses cannot add up."""
    climbers = [
        climber
        for plausible in ((80, 128), None)
        for climber in two_core_climbs(
            SLEEP_20MS_128, 112, plausible, seeds=16, cv=0.02, samples=150
        )
    ]
    peak = SLEEP_20MS_128.peak()
    finals = [SLEEP_20MS_128.expected(climber.best_tuple)[0] / peak for climber in climbers]
    # Measured: 4 of 32 end below 0.95 of the best, the worst at 0.944 (before: 12 of 32).
    assert sum(final < 0.95 for final in finals) <= 6, sorted(finals)[:8]
    assert min(finals) >= 0.9


#: PgBouncer, TPC-B-like × 32 clients on 2 cores, live (2026-12-07, an Intel host): a flat
#: top from 8 to 20 above a knee, 4 at 0.87 and 2 at 0.57 of 8's throughput.
TPCB_32 = MeasuredCurve(
    32, (2, 4, 8, 12, 20, 32, 64, 128), (0.574, 0.872, 1.0, 0.979, 0.938, 0.902, 0.889, 0.907)
)


def test_the_economy_walk_between_a_tie_and_a_loss_keeps_within_epsilon() -> None:
    """Live, the walk from a recommended 12 took 7 level with the top, saw 5 and 4 lose, and
    took 6 between them at a loss inside the plateau's tolerance (4.5%): 0.947 of the best
    by the sweep. Below the smallest tie, with a size shown to lose within a step, the
    curve falls, and a probe there must stay within ε."""
    climbers = two_core_climbs(
        TPCB_32,
        12,
        (6, 24),
        seeds=24,
        cv=0.03,
        samples=150,
        sample_filter=lambda _, sample: replace(sample, cpu_busy=1.1, lock_waits=0.38),
    )
    finals = [TPCB_32.expected(climber.best_tuple)[0] / TPCB_32.peak() for climber in climbers]
    # Measured: 2 of 24 below 0.95 of the best (before: 6 of 24, each at 6).
    assert sum(final < 0.95 for final in finals) <= 3, sorted(finals)[:8]
