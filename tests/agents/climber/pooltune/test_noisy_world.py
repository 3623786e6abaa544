"""The pooltune climber against what real servers do (issue 15): stalls, a wide plateau, a
workload that changes during the search, secondary knobs that do nothing, wrong warm
starts, a collapse past the optimum."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from agents.climber import EventKind, KnobSpace, PooltuneClimber, Sample
from agents.sim import KneeCurve, NoiseConfig, ThroughputCurve, UslCurve
from agents.sim.curves import optimum_size
from benchmarks.climb import t95
from benchmarks.climb.curves import CliffCurve, PlateauCurve, StallLimitCurve
from benchmarks.climb.replay import real_cases
from benchmarks.climb.worlds import ReplayWorld
from benchmarks.live.climb_record import replay
from tests.agents.climber.helpers import SIZE, MeasuredCurve, Run, drive, new

OVERSUBSCRIBE = "thread_pool_oversubscribe"
STALL = "thread_pool_stall_limit"
#: Live records of real climbs, replayed.
DATA = Path(__file__).parent / "data"


def pooltune(cpus: int = 8, space: KnobSpace | None = None, /, **config: float) -> PooltuneClimber:
    climber = new("pooltune", cpus, space, **config)
    assert isinstance(climber, PooltuneClimber)
    return climber


def stalls(share: float, *, seed: int, flagged: bool) -> object:
    """A sample filter: ``share`` of the samples collapse to a fifth (IO stalls)."""
    rng = np.random.default_rng(seed)
    draws = rng.random(1000)

    def apply(index: int, sample: Sample) -> Sample:
        if draws[index] < share:
            return replace(sample, throughput=0.2 * sample.throughput, stalled=flagged or None)
        return replace(sample, stalled=False if flagged else None)

    return apply


def seeded_runs(
    curve: ThroughputCurve,
    seeds: int,
    *,
    start: dict[str, int],
    cpus: int = 4,
    space: KnobSpace | None = None,
    samples: int = 300,
    cv: float = 0.05,
    stall_share: float = 0.0,
) -> list[Run]:
    """One cold run per seed on ``curve`` at noise ``cv``, with unflagged stalls on
    ``stall_share`` of the samples if any."""
    runs = []
    for seed in range(seeds):
        runs.append(
            drive(
                pooltune(cpus, space),
                curve,
                start=start,
                samples=samples,
                noise=NoiseConfig(cv=cv),
                seed=seed,
                sample_filter=(
                    stalls(stall_share, seed=seed, flagged=False)  # type: ignore[arg-type]
                    if stall_share
                    else None
                ),
            )
        )
    return runs


def test_stalls_do_not_sink_a_better_size() -> None:
    """An IO-bound curve (best at 16, the default 4 at a third of it) on a server that
    stalls on a fifth of its samples: one stalled sample never decides a probe, so the
    climber leaves the default whether or not the target flags the stalls."""
    curve = KneeCurve(rate=600.0, knee_size=12.0, sharpness=4.0, connections=64, cores=4)
    for flagged in (False, True):
        finals = []
        for seed in range(8):
            climber = pooltune(4)
            run = drive(
                climber,
                curve,
                start={SIZE: 4},
                samples=200,
                noise=NoiseConfig(cv=0.05),
                seed=seed,
                sample_filter=stalls(0.2, seed=seed, flagged=flagged),  # type: ignore[arg-type]
            )
            finals.append(float(np.mean(run.expected[-60:])) / curve.peak())
        assert sum(f >= 0.9 for f in finals) >= 7, (flagged, finals)


def test_the_economy_walk_never_adds_up_small_losses() -> None:
    """A plateau over a 4× range above a gentle rise, started far above it: every size
    below is judged against the best measured, so the walk stops where the loss from the
    best reaches the tolerance instead of stepping on down the rise."""
    curve = PlateauCurve(rate=1000.0, knee=6.0, width=4.0, sharpness=1.5, fall=0.5, cores=4)
    for seed in range(6):
        climber = pooltune(4)
        drive(
            climber,
            curve,
            start={SIZE: 128},
            samples=300,
            noise=NoiseConfig(cv=0.03),
            seed=seed,
        )
        assert curve.expected(climber.best_tuple)[0] >= 0.93 * curve.peak()


def test_the_walk_down_a_flat_tail_ends_at_twice_the_cores() -> None:
    """Two cores, started at 20 (far above the cores, where a falling curve's tail is
    flat) on a curve flat from 8 up that falls towards the smallest sizes (2 at 0.61, 4 at
    0.89, as pgbench select-only through PgBouncer measured), under 8% noise: the walk down
    the tail ends at twice the cores instead of stepping on to size 2; below that, steps
    are bounded by what a probe may cost."""
    curve = KneeCurve(rate=18000.0, knee_size=3.0, sharpness=3.0, connections=32, cores=2)
    start = curve.expected({SIZE: 20})[0]
    worst = []
    for seed in range(16):
        climber = pooltune(2)
        run = drive(
            climber, curve, start={SIZE: 20}, samples=150, noise=NoiseConfig(cv=0.08), seed=seed
        )
        worst.append(min(run.expected) / start)
        assert curve.expected(climber.best_tuple)[0] >= 0.9 * start
    # Before: a third of the seeds probed size 2 (0.61 of the start).
    assert min(worst) >= 0.75, worst


def switching_runs(
    first: ThroughputCurve,
    second: ThroughputCurve,
    *,
    at: int,
    start: int,
    cpus: int,
    seeds: int,
    samples: int = 160,
    space: KnobSpace | None = None,
) -> list[tuple[PooltuneClimber, Run]]:
    """Cold runs from pool size ``start`` at 5% noise, one per seed, whose server switches
    from ``first`` to ``second`` at sample ``at`` (``space``: the pool size alone unless
    told)."""

    def switch(index: int, server: object) -> None:
        if index == at:
            server.switch_workload(second)  # type: ignore[attr-defined]

    runs = []
    for seed in range(seeds):
        climber = pooltune(cpus, space)
        run = drive(
            climber,
            first,
            start={SIZE: start},
            samples=samples,
            noise=NoiseConfig(cv=0.05),
            seed=seed,
            hook=switch,
        )
        runs.append((climber, run))
    return runs


def test_a_workload_change_during_the_search_restarts_it() -> None:
    """The optimum moves from 8 to 48 while the climber is still searching (sample 20):
    the best tuple, measured again between probes, has moved beyond the noise, so the
    search starts again instead of converging on stale measurements."""
    first = UslCurve.with_peak_at(8, connections=1000, cores=8)
    second = UslCurve.with_peak_at(48, rate=3000.0, connections=1000, cores=8)
    back = []
    for climber, run in switching_runs(first, second, at=20, start=1, cpus=8, seeds=4):
        changes = [e.step for e in climber.events if e.kind is EventKind.WORKLOAD_CHANGE]
        converged = [e.step for e in climber.events if e.kind is EventKind.CONVERGED]
        assert changes and changes[0] <= 30 and (not converged or changes[0] < converged[0])
        back.append(t95(np.asarray(run.expected[20:]) / second.peak()))
    # Measured: 37, never, 36, 40 samples after the change (the economy walk near the new
    # peak keeps a size at 0.949 of it in one seed; before the re-tested walk of
    # tie_z 0.75: 20, 75, 36, 23).
    assert np.median(back) <= 40 and sorted(back)[-2] < 100


def test_secondary_knobs_that_do_nothing_end_at_their_defaults() -> None:
    """Formula curves ignore the secondary knobs; under stalls and 10% noise a probe of
    them now and then measures better by chance. A change is kept only if a fresh A/B/A
    re-test shows the gain, so they end at their defaults."""
    curve = UslCurve.with_peak_at(12, connections=500, cores=4)
    space = KnobSpace.from_engine("mariadb", 4)
    runs = seeded_runs(curve, 10, start=space.defaults(), space=space, cv=0.1, stall_share=0.1)
    moved = sum(
        run.climber.best_tuple[OVERSUBSCRIBE] != 3 or run.climber.best_tuple[STALL] != 500
        for run in runs
    )
    assert moved <= 1


def test_a_lucky_secondary_probe_is_not_kept_without_its_re_test() -> None:
    """The first visit at oversubscribe 1 reads 35% high (a fluke the search calls a gain),
    later ones do not: the re-test against the default on fresh samples does not show the
    gain, so the knob goes back."""
    curve = UslCurve.with_peak_at(12, connections=500, cores=4)
    space = KnobSpace.from_engine("mariadb", 4)
    seen = {"count": 0}

    def fluke(index: int, sample: Sample) -> Sample:
        if sample.knobs.get(OVERSUBSCRIBE) == 1 and seen["count"] < 3:
            seen["count"] += 1
            return replace(sample, throughput=1.35 * sample.throughput)
        return sample

    climber = pooltune(4, space)
    drive(climber, curve, start=space.defaults(), samples=300, sample_filter=fluke)
    assert seen["count"] > 0
    assert climber.best_tuple[OVERSUBSCRIBE] == 3
    assert any(
        e.kind is EventKind.GUARD and "not confirmed by a re-test" in e.reason
        for e in climber.events
    )


def test_a_wrong_recommendation_is_a_prior_not_a_fence() -> None:
    """Recommended 5× and 0.25× the best, with a plausible range around the wrong start:
    the climber first looks at a clearly smaller pool, and widens its steps while the
    evidence keeps contradicting the range, reaching 95% of the peak within a minute or
    two."""
    rng = np.random.default_rng(3)
    reached = []
    for seed in range(10):
        curve = UslCurve.with_peak_at(float(rng.uniform(4, 20)), connections=1000, cores=4)
        optimum = optimum_size(curve)
        for factor in (5.0, 0.25):
            start = max(1, round(optimum * factor))
            run = drive(
                pooltune(4),
                curve,
                start={SIZE: start},
                samples=120,
                seed=seed,
                noise=NoiseConfig(cv=0.05),
                plausible_range={SIZE: (max(1, round(start / 1.5)), round(start * 1.5))},
            )
            reached.append(t95(np.asarray(run.expected) / curve.peak()))
    assert sum(r <= 60 for r in reached) >= 17


def test_a_collapse_past_the_optimum_is_left_after_one_sample() -> None:
    """Throughput halves past twice the best size: a probe there is left on its first
    measured sample (with the blended one before it agreeing), so the server spends at most
    two samples there in a row."""
    curve = CliffCurve.past_twice_the_best(UslCurve.with_peak_at(6, connections=500, cores=2))
    for seed in range(6):
        run = drive(
            pooltune(2),
            curve,
            start={SIZE: 1},
            samples=150,
            noise=NoiseConfig(cv=0.03),
            seed=seed,
        )
        streak = longest = 0
        for size in run.sizes:
            streak = streak + 1 if size > curve.edge else 0
            longest = max(longest, streak)
        assert longest <= 2


def switch_during_tuple_search(
    climber: PooltuneClimber, second: UslCurve, switched: list[int], *, after: int
) -> object:
    """A hook that switches the server to ``second`` once the climber has spent ``after``
    samples searching the other knobs (``switched`` gets the index)."""
    searching_tuple: list[int] = []

    def switch(index: int, server: object) -> None:
        if climber.state == "search-tuple":
            searching_tuple.append(index)
        if not switched and len(searching_tuple) == after:
            server.switch_workload(second)  # type: ignore[attr-defined]
            switched.append(index)

    return switch


def test_a_workload_change_during_a_secondary_knobs_retest_restarts_the_climb() -> None:
    """The workload changes (5× the throughput, the best size from 6 to 22) while the other
    knobs are searched: their re-tests alternate with the tuple in force, whose visits are
    witnesses of the change as between probes, so the climb starts again instead of
    measuring the knob on the new load and holding the old size."""
    first = UslCurve.with_peak_at(6, connections=1000, cores=8)
    second = UslCurve.with_peak_at(22, rate=5000.0, connections=1000, cores=8)
    for seed in range(4):
        climber = pooltune(8, KnobSpace.from_engine("mariadb", 8))
        switched: list[int] = []
        run = drive(
            climber,
            first,
            start={SIZE: 1},
            samples=250,
            noise=NoiseConfig(cv=0.05),
            seed=seed,
            hook=switch_during_tuple_search(climber, second, switched, after=8),  # type: ignore[arg-type]
        )
        assert switched, seed
        changes = [e.step for e in climber.events if e.kind is EventKind.WORKLOAD_CHANGE]
        assert any(switched[0] < step <= switched[0] + 40 for step in changes), (seed, changes)
        assert np.mean(run.expected[-60:]) >= 0.9 * second.peak(), seed


def test_a_change_while_a_start_far_above_the_cores_is_verified_leaves_it_a_guess() -> None:
    """The load falls to 0.4 of its level while the climber still verifies a pool of 128 on
    2 cores, on the flat tail of a CPU-bound curve (0.05 of the best): the climb starts
    again, and the pool in force is still someone's guess, not a size this climber chose,
    so it is verified down again rather than searched around as a known best."""
    sizes = (1, 2, 3, 4, 6, 8, 16, 32, 64, 128)
    shares = (0.52, 0.91, 1.0, 0.94, 0.75, 0.59, 0.24, 0.07, 0.05, 0.05)
    first = MeasuredCurve(200, sizes, shares)
    second = MeasuredCurve(200, sizes, tuple(0.4 * share for share in shares))
    finals = []
    for climber, run in switching_runs(
        first,
        second,
        at=9,
        start=128,
        cpus=2,
        seeds=10,
        samples=200,
        space=KnobSpace.from_engine("mariadb", 2),
    ):
        assert any(e.kind is EventKind.WORKLOAD_CHANGE for e in climber.events)
        finals.append(float(np.mean(run.expected[-60:])) / (0.4 * first.peak()))
    # Measured: 10 of 10 at ≥ 0.97 of the new best (the restart holding 128 as chosen: 3
    # of 10, the others at 0.05-0.33).
    assert sum(f >= 0.95 for f in finals) >= 9, finals


def finals_after_an_unseen_move(
    first_at: float, second_at: float, *, held: int, seeds: int, cv: float, samples: int
) -> list[float]:
    """Cold climbs from 1 on 8 cores whose best moves from ``first_at`` to ``second_at``
    once the other knobs have been searched for 8 samples, at a rate that keeps the
    throughput at ``held`` unchanged (nothing measured there shows the change): each run's
    final quality (the last 60 samples) against the new best."""
    first = UslCurve.with_peak_at(first_at, connections=1000, cores=8)
    unit = UslCurve.with_peak_at(second_at, connections=1000, cores=8)
    rate = 1000.0 * first.expected({SIZE: held})[0] / unit.expected({SIZE: held})[0]
    second = UslCurve.with_peak_at(second_at, rate=rate, connections=1000, cores=8)
    finals = []
    for seed in range(seeds):
        climber = pooltune(8, KnobSpace.from_engine("mariadb", 8))
        switched: list[int] = []
        run = drive(
            climber,
            first,
            start={SIZE: 1},
            samples=samples,
            noise=NoiseConfig(cv=cv),
            seed=seed,
            hook=switch_during_tuple_search(climber, second, switched, after=8),  # type: ignore[arg-type]
        )
        assert switched, seed
        finals.append(float(np.mean(run.expected[-60:])) / second.peak())
    return finals


def test_a_gain_below_the_best_frees_the_economy_walk_from_stale_losses() -> None:
    """The best size moves from 3.5 to 1.5 while the other knobs are searched, at a
    throughput that leaves the held size's level unchanged (nothing to detect there). The
    economy walk then finds 3 better than the held 4 and confirms it: the line search's
    loss at 2, measured on the old load, was measured against a best now beaten below it,
    so it no longer bounds the walk, which goes on to the new best."""
    finals = finals_after_an_unseen_move(3.5, 1.5, held=4, seeds=8, cv=0.02, samples=300)
    # Measured: all 8 at the new best (before: 3 of 8 held 3, at 0.78 of it).
    assert min(finals) >= 0.95, finals


def test_a_steep_fall_below_a_low_recommendation_widens_the_first_step_up() -> None:
    """Recommended at a quarter of the best with a narrow range: the smaller pool the
    climber looks at first loses steeply, which on the scalability law puts the peak beyond
    the range, so the first step up goes past the range's upper end instead of creeping
    up in range-sized steps that a gain of a few percent cannot prove."""
    reached = []
    for seed in range(8):
        curve = UslCurve.with_peak_at(36.0, connections=1000, cores=4)
        start = 9
        high = round(start * 1.5)
        run = drive(
            pooltune(4),
            curve,
            start={SIZE: start},
            samples=120,
            seed=seed,
            noise=NoiseConfig(cv=0.05),
            plausible_range={SIZE: (round(start / 1.5), high)},
        )
        first_up = next(size for size in run.sizes if size > start)
        assert first_up > high, (seed, first_up)
        reached.append(t95(np.asarray(run.expected) / curve.peak()))
    # Measured: 12–30 samples, median 19 (before: 25–52 and one never, median 29).
    assert max(reached) <= 40 and np.median(reached) <= 25


def test_an_optimum_that_moves_up_unseen_at_the_held_size_is_found_again() -> None:
    """The workload changes while the other knobs are searched, and the best size moves
    from 6 to 24 while the throughput at 6 stays the same: nothing the climber measures
    at its size shows the change, so after the other knobs it looks one step above before
    the economy walk, finds a gain there and locates the size again."""
    finals = finals_after_an_unseen_move(6, 24, held=6, seeds=6, cv=0.05, samples=250)
    # Measured: 0.92-0.99 of the new peak (without the look above: 0.45-0.59).
    assert sum(f >= 0.9 for f in finals) >= 5, finals


def replay_finals(case_id: str, *, seeds: range, **config: float) -> list[float]:
    """Final quality (true throughput over the last 60 samples / the best) of cold climbs
    from the engine default on a replayed real case, the server's CPU use in every sample."""
    case = real_cases()[case_id]
    space = KnobSpace.from_engine("mariadb", case.cores, names=[SIZE])
    finals = []
    for seed in seeds:
        world = ReplayWorld(case, seed=seed)
        climber = pooltune(case.cores, space, **config)
        climber.reset({SIZE: case.cores})
        knobs = climber.current_tuple
        truth = []
        for index in range(300):
            seen = world.observe(index, knobs)
            truth.append(seen.truth / seen.peak)
            knobs = climber.step(seen.sample())
        finals.append(float(np.mean(truth[-60:])))
    return finals


def test_a_loss_a_small_step_up_on_idle_cores_is_looked_past() -> None:
    """A real IO-bound load (sysbench read-write, every commit synced, 64 clients; best 16,
    the default 2 at 0.46 of it, 3 at 0.52) stalls at 2 and 3 groups: two-second samples
    swing from 0 to 380 transactions/s, and a probe of 3 now and then measures a loss
    against 2. With the server using 0.7 of its 2 cores the pool is not what its CPU
    limits, so that loss is looked past once, a step farther: no run holds the default,
    where without the rule 6 of these 32 held it (0.46 of the best)."""
    case = "mariadb-2core-v2:io_bound_read_write-c64"
    finals = replay_finals(case, seeds=range(17, 49))
    assert min(finals) >= 0.6 and sum(f >= 0.9 for f in finals) >= 28, finals
    without = replay_finals(case, seeds=range(17, 49), idle_cpu_share=0.0)
    assert sum(f < 0.6 for f in without) >= 3, without


def test_a_tie_a_step_up_from_one_group_is_looked_past() -> None:
    """A server pinned to one core (sysbench point selects, 64 clients; the engine default
    1 at 0.83 of the best, 2 at 0.80, 3 at 0.99): the first step up from 1 is 2, and the
    larger step a tie there calls for rounds to 2 as well. The look farther must reach
    past the probe (3), or the climb ends after one probe: every run held 1 before."""
    finals = replay_finals("mariadb-2core-v2:pinned_point_select-c64", seeds=range(12))
    # Measured: 10 of 12 at 0.99 (before: 12 of 12 at 0.83).
    assert sum(f >= 0.95 for f in finals) >= 8, finals


def sunk_first_visit_at_or_below(limit: int) -> object:
    """A sample filter: the first visit of a size at or below ``limit`` runs at 0.7 of the
    curve (a stall or a dip of the server's own, unflagged), every later sample as is."""
    state: dict[str, object] = {"size": None, "over": False}

    def apply(index: int, sample: Sample) -> Sample:
        size = sample.knobs[SIZE]
        if state["size"] is not None and size != state["size"]:
            state["over"] = True
        if not state["over"] and size <= limit:
            state["size"] = size
            return replace(sample, throughput=0.7 * sample.throughput)
        return sample

    return apply


def test_a_loss_that_ends_the_walk_down_from_far_above_is_looked_at_again() -> None:
    """From 128 on 4 cores (49 connections: flat at 0.75 of the best from 38 up, best 16),
    the walk down to twice the cores meets its first size under 40 on a visit that runs at
    0.7: the loss that would end the walk is re-tested (A/B/A/B on fresh samples) once,
    and the walk goes on to the peak instead of holding the shelf."""
    curve = MeasuredCurve(
        49,
        (1, 2, 4, 8, 16, 24, 32, 38, 128),
        (0.085, 0.17, 0.34, 0.66, 1.0, 0.93, 0.80, 0.746, 0.746),
        cores=4,
    )
    finals = []
    for seed in range(12):
        run = drive(
            pooltune(4),
            curve,
            start={SIZE: 128},
            samples=300,
            noise=NoiseConfig(cv=0.03),
            seed=seed,
            sample_filter=sunk_first_visit_at_or_below(40),  # type: ignore[arg-type]
        )
        finals.append(float(np.mean(run.expected[-60:])) / curve.peak())
    # Measured: 9 of 12 at ≥ 0.95, the rest 0.93 (without the re-test 10 of 12 held 31–38,
    # at 0.75).
    assert sum(f >= 0.95 for f in finals) >= 8 and min(finals) >= 0.9, finals


def test_an_over_provisioned_pool_on_idle_cores_is_not_probed_down_first() -> None:
    """PgBouncer's default 20 on 2 cores is "over-provisioned" by the core count, but under
    20 ms sleeps per transaction (32 clients, `datasets/pgbouncer-2core-v1`, replayed) the
    server keeps a fifth of a core busy and throughput grows with the pool: 0.62 of the best
    at 20, 0.37 at 12, the best at 32-64. A first probe down cost 0.6 of the start (issue
    18's bar: 0.8); with the cores idle the climb looks up first, and still ends at the best."""
    case = real_cases()["pgbouncer-2core-v1:sleep_20ms-tx-c32"]
    worst, finals = [], []
    for seed in range(6):
        world = ReplayWorld(case, seed=seed)
        space = KnobSpace.from_engine(world.engine, case.cores, bounds=world.bounds)
        climber = pooltune(case.cores, space)
        start = space.defaults()
        climber.reset(start)
        knobs = climber.current_tuple
        truth = []
        for index in range(300):
            seen = world.observe(index, knobs)
            truth.append(seen.truth)
            knobs = climber.step(seen.sample())
        worst.append(min(truth) / world.truth(start))
        finals.append(float(np.mean(truth[-60:])) / case.peak())
    # Measured: worst 1.00, final 0.92-0.99 (before: worst 0.60 in every run, the probe of 12).
    assert min(worst) >= 0.8, worst
    assert min(finals) >= 0.9, finals


def test_a_stall_limit_shown_to_matter_is_followed_past_its_first_gain() -> None:
    """Long statements block their groups: 500 → 125 ms gains about 30%, 125 → 31 ms about
    7%. Once the first gain survived its re-test the knob is known to matter, so the next
    step needs no more than ε: the climber ends near the best stall limit, not at 125."""
    curve = StallLimitCurve.with_gain(
        UslCurve.with_peak_at(12, connections=500, cores=4), gain=1.4, long_ms=2000.0, tick_ms=0.5
    )
    space = KnobSpace.from_engine("mariadb", 4)
    runs = seeded_runs(curve, 12, start=space.defaults(), space=space)
    peak = curve.peak()
    near_best = sum(curve.expected(run.climber.best_tuple)[0] >= 0.95 * peak for run in runs)
    assert near_best >= 10


def test_a_tie_inside_the_stall_limits_bracket_goes_to_the_value_that_measured_higher() -> None:
    """The stall limit's best lies between the steps of its search (15-22 ms here; 31 ms
    gives 0.977 of its factor): once the knob is shown to matter, a refinement probe level
    with the value held within ε is taken if it measured higher. Ties keep the value only
    so that a knob without effect stays at its default, not to keep the coarser step."""
    curve = StallLimitCurve.with_gain(
        UslCurve.with_peak_at(12, connections=500, cores=4), gain=2.6, long_ms=600.0, tick_ms=1.0
    )
    space = KnobSpace.from_engine("mariadb", 4)
    runs = seeded_runs(curve, 30, start=space.defaults(), space=space)
    best = max(float(curve.factor(ms)) for ms in range(1, 600))
    factors = [float(curve.factor(run.climber.best_tuple[STALL])) / best for run in runs]
    # Measured: 27 of 30 within 2% of the best factor (ties keeping the value: 21).
    assert sum(f >= 0.98 for f in factors) >= 25, factors


def test_a_reference_visit_sunk_by_stalls_is_looked_at_again_not_taken_for_a_change() -> None:
    """A fifth of the samples stall (unflagged): two in a row at the reference look like a
    fall of the workload. On a server seen to stall the climber measures a fallen reference
    again before restarting the climb, so false restarts are rare."""
    curve = UslCurve.with_peak_at(12, connections=500, cores=4)
    runs = seeded_runs(curve, 20, start={SIZE: 4}, stall_share=0.2)
    restarts = sum(e.kind is EventKind.WORKLOAD_CHANGE for run in runs for e in run.climber.events)
    # Measured: 2 restarts in 20 runs (taking a fallen visit at once: 12).
    assert restarts <= 5


def test_the_walk_down_from_far_above_stops_at_a_probe_that_collapsed() -> None:
    """From 128 on two cores the walk down checks smaller pools while they tie. Past the
    knee a probe collapses and is left after one sample, and that collapse is a loss: the
    walk stops there rather than go on to the floor (a fifth of the start)."""
    curve = KneeCurve(rate=1000.0, knee_size=24.0, sharpness=4.0, connections=200, cores=2)
    runs = seeded_runs(curve, 12, start={SIZE: 128}, cpus=2, samples=120)
    worst = [min(run.expected) / run.expected[0] for run in runs]
    # Measured: at worst 0.57 of the start (walking on past a collapse: 0.17, in 2 of 12).
    assert min(worst) >= 0.5


def test_sizes_rolled_back_from_bound_the_economy_walk() -> None:
    """PgBouncer from its default 20 on two cores: the walk down rolls back from the knee's
    fall (4 is half the start), and while the climb goes on the best drifts down to 7
    (select-only × 32 live: the worst 10 s held the economy walk's probe of a size rolled
    back from before). Such a size fell sharply, not within the noise: it bounds the
    economy walk as a loss does, also after a gain below the best cleared the line
    search's losses, so the server is not taken under 0.8 of its start again."""
    space = KnobSpace.from_engine("pgbouncer", 2)
    knob = space.size.name
    sizes = (1, 2, 3, 4, 5, 7, 10, 20, 40, 128)
    first = MeasuredCurve(
        32, sizes, (0.1, 0.2, 0.3, 0.5, 0.85, 0.95, 0.98, 0.97, 0.96, 0.95), knob=knob
    )
    second = MeasuredCurve(
        32, sizes, (0.1, 0.2, 0.3, 0.5, 0.9, 1.0, 0.96, 0.92, 0.9, 0.88), knob=knob
    )
    falls = 0
    for switch_at in (30, 50, 70):
        for seed in range(30):
            run = drive(
                pooltune(2, space),
                first,
                start={knob: 20},
                samples=300,
                noise=NoiseConfig(cv=0.06),
                seed=seed,
                hook=lambda index, server, at=switch_at: (  # type: ignore[misc]
                    index == at and server.switch_workload(second)
                ),
            )
            # The walk down's own first probe of the fall is over by sample 60.
            falls += any(level < 0.8 * run.expected[0] for level in run.expected[60:])
    # Measured: 6 of 90 runs (probing sizes rolled back from again: 13 of 90).
    assert falls <= 9, falls


def test_a_live_walk_down_steps_from_the_level_it_left() -> None:
    """A real walk down from PgBouncer's default on a noisy 2-core host (select-only × 32,
    12-06): 7 read below 20, and the walk stepped on to 4 (the sweep: 0.77 of the best) by a
    worst case counted from the start's level. From 7's own level the bound is 5
    (docs/climber.md, "Steps")."""
    replayed = replay(
        json.loads((DATA / "live-select-only-32-rollback.json").read_text()), "pgbouncer"
    )
    assert replayed.agreed == 24
    assert replayed.recorded == {"default_pool_size": 4}
    assert replayed.answered == {"default_pool_size": 5}


def test_a_live_walk_down_from_a_recommendation_stops_at_twice_the_cores() -> None:
    """A real walk down verifying the heuristic's 16 (TPC-B-like × 32 on PgBouncer, 12-07,
    a noisy 2-core host; the sweep's best 8, 2 at 0.58 of it) went 10, 6, 4 and on to 2 at
    739-801 against 1,120-1,325 at 10, the run's worst 10 s. Below twice the cores a walk's
    tail premise no longer holds, as for a cold start far above them: the walk ends at 4,
    and the search goes on from 10, the highest size walked, between 6 and 16."""
    replayed = replay(json.loads((DATA / "live-tpcb-32-walk-down.json").read_text()), "pgbouncer")
    assert replayed.agreed == 19
    assert replayed.recorded == {"default_pool_size": 2}
    assert replayed.answered is not None
    assert 6 < replayed.answered["default_pool_size"] < 16
