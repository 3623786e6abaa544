"""The sweep engine against an in-memory target with a known curve, lag and drift."""

from __future__ import annotations

import csv
import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from agents.config import ConfigError
from agents.console import EXIT_CONFIG
from agents.knobs import Engine
from agents.state import OriginalTupleFile
from agents.sweep import (
    Point,
    Progress,
    Sweeper,
    SweepError,
    SweepInterrupted,
    SweepPlan,
    SweepResult,
    best_value,
    format_table,
    knee_value,
    noise_level,
    samples_csv_path,
    smallest_within_noise,
    visit_order,
    within_noise,
    write_csv,
    write_plot,
)
from agents.sweep import cli as sweep_cli
from agents.sweep.curve import SweepSample, curve_points
from agents.sweep.stored import sweep_from_json, sweep_to_json
from agents.targets.base import Snapshot, TargetInfo, TargetUnavailable
from agents.wire import HostFacts

SIZE = "thread_pool_size"
CURVE = {1: 500.0, 2: 900.0, 4: 1000.0, 8: 1000.0, 16: 800.0}


class CurveTarget:
    """A server whose throughput is ``curve[size]`` (times ``level(t)``, plus ``drift`` per
    second).

    A size change takes effect ``lag_s`` after :meth:`apply`. Time is a fake clock
    advanced by :meth:`wait` (or the real monotonic clock with ``real_time``);
    transactions are integrated exactly, piecewise, so every sample's value is known.
    """

    engine = Engine.MARIADB

    def __init__(
        self,
        curve: Mapping[int, float] = CURVE,
        *,
        lag_s: float = 0.0,
        drift_per_s: float = 0.0,
        size: int = 2,
        real_time: bool = False,
        fail_on_read: int | None = None,
        unavailable_reads: frozenset[int] = frozenset(),
        level: Callable[[float], float] | None = None,
        stalling: frozenset[int] | None = None,
    ) -> None:
        #: Sizes at which the pool's stall counter rises every second (None: no counter).
        self.stalling = stalling
        self.stalls = 0.0
        self.unavailable_reads = unavailable_reads
        self.level = level
        self.curve = dict(curve)
        self.lag_s = lag_s
        self.drift_per_s = drift_per_s
        self.knobs = {SIZE: size, "thread_pool_oversubscribe": 3, "thread_pool_stall_limit": 500}
        self.effective = size
        self.pending: tuple[float, int] | None = None
        self.real_time = real_time
        self.start = time.monotonic() if real_time else 0.0
        self.clock = 0.0
        self.integrated_to = 0.0
        self.transactions = 0.0
        self.reads = 0
        self.fail_on_read = fail_on_read
        self.applied: list[dict[str, int]] = []

    # -- clock -------------------------------------------------------------------------
    def now(self) -> float:
        return time.monotonic() - self.start if self.real_time else self.clock

    def _rate(self, t: float) -> float:
        level = self.level(t) if self.level is not None else 1.0
        return self.curve.get(self.effective, 0.0) * level + self.drift_per_s * t

    def _integrate(self, until: float) -> None:
        while self.integrated_to < until:
            end = until
            if self.pending is not None and self.pending[0] <= until:
                end = max(self.integrated_to, self.pending[0])
            t0, t1 = self.integrated_to, end
            # Exact for a linear rate: the midpoint rule.
            self.transactions += self._rate((t0 + t1) / 2) * (t1 - t0)
            if self.stalling is not None and self.effective in self.stalling:
                self.stalls += t1 - t0
            self.integrated_to = end
            if self.pending is not None and self.pending[0] <= end:
                self.effective = self.pending[1]
                self.pending = None
            if end == until:
                break

    def wait(self, seconds: float) -> bool:
        self.clock += seconds
        return False

    # -- Target protocol ---------------------------------------------------------------
    def connect(self) -> None:
        pass

    def close(self) -> None:
        pass

    def check(self, *, read_only: bool = False) -> TargetInfo:
        return TargetInfo(
            engine=self.engine,
            version="10.11.19-MariaDB",
            thread_handling="pool-of-threads",
            via_extra_port=True,
            latency_available=False,
            server_pid=None,
        )

    def host_facts(self) -> HostFacts:
        return HostFacts(hostname="fake", engine=self.engine, engine_version="10.11", cpu_count=2)

    def read_counters(self) -> Snapshot:
        self.reads += 1
        if self.fail_on_read is not None and self.reads >= self.fail_on_read:
            raise RuntimeError("collector exploded")
        if self.reads in self.unavailable_reads:
            raise TargetUnavailable("reading counters: Lost connection (timed out)")
        now = self.now()
        self._integrate(now)
        counters = {
            "Questions": self.transactions * 10,
            "Com_commit": self.transactions,
            "Com_rollback": 0.0,
            "Com_select": self.transactions * 8,
            "Com_update": self.transactions * 2,
            "agent_statements": 0.0,
            "agent_selects": 0.0,
        }
        if self.stalling is not None:
            counters["tp_stalls"] = self.stalls
            counters["tp_wakes_due_to_stall"] = 3 * self.stalls  # three wakes a second
        return Snapshot(
            taken_at=now,
            uptime_s=10_000.0 + now,
            counters=counters,
            gauges={"tp_connections": 16.0, "tp_active_threads": 2.0},
        )

    def current_tuple(self, names: list[str]) -> dict[str, int]:
        return {name: self.knobs[name] for name in names}

    def apply(self, values: Mapping[str, int]) -> dict[str, int]:
        self._integrate(self.now())
        self.applied.append(dict(values))
        self.knobs.update(values)
        if SIZE in values:
            if self.lag_s <= 0:
                self.effective = values[SIZE]
                self.pending = None
            else:
                self.pending = (self.now() + self.lag_s, values[SIZE])
        return {name: self.knobs[name] for name in values}


def make_sweeper(
    target: CurveTarget,
    tmp_path: Path,
    *,
    on_progress: Callable[[Progress], None] | None = None,
    **plan: object,
) -> Sweeper:
    settings: dict[str, object] = {
        "knob": SIZE,
        "values": (1, 2, 4, 8, 16),
        "dwell_s": 4.0,
        "repeats": 2,
        "sample_period_s": 1.0,
        "discard_samples": 1,
    }
    settings.update(plan)
    return Sweeper(
        target=target,
        plan=SweepPlan(**settings),  # type: ignore[arg-type]
        state=OriginalTupleFile(tmp_path / "original-tuple.json"),
        wait=target.wait,
        host_cpu=None,
        on_progress=on_progress,
    )


# -- visiting order ---------------------------------------------------------------------


def test_each_repeat_visits_every_value_once() -> None:
    grid = [1, 2, 3, 4, 6, 8, 16, 32, 64]
    for order in ("balanced", "shuffle"):
        passes = visit_order(grid, 4, order, seed=3)  # type: ignore[arg-type]
        assert len(passes) == 4
        assert all(sorted(p) == grid for p in passes)


def test_balanced_goes_forwards_then_backwards_without_a_repeated_visit() -> None:
    passes = visit_order([1, 2, 4, 8], 3)
    assert passes[0] == [1, 2, 4, 8]
    # Backwards, but not starting on 8 again (that would be one long visit, not two).
    assert passes[1] == [4, 8, 2, 1]
    flat = [value for p in passes for value in p]
    assert all(a != b for a, b in zip(flat, flat[1:], strict=False))


def test_interleaving_keeps_a_linear_drift_off_the_grid() -> None:
    """With a drift in time, a single order aliases it onto the grid; interleaved
    repeats put every value near the middle of the run on average."""
    grid = list(range(9))

    def spread_of_mean_positions(passes: list[list[int]]) -> float:
        flat = [value for p in passes for value in p]
        mean_position = {
            v: sum(i for i, x in enumerate(flat) if x == v) / flat.count(v) for v in grid
        }
        return max(mean_position.values()) - min(mean_position.values())

    same_order = [grid[:] for _ in range(3)]
    assert spread_of_mean_positions(same_order) == 8.0
    assert spread_of_mean_positions(visit_order(grid, 2)) <= 1.0
    assert spread_of_mean_positions(visit_order(grid, 3)) <= 2.0
    assert spread_of_mean_positions(visit_order(grid, 4)) <= 1.0


def test_a_drifting_flat_curve_looks_flat_after_interleaving(tmp_path: Path) -> None:
    flat = dict.fromkeys((1, 2, 4, 8, 16), 1000.0)
    target = CurveTarget(flat, drift_per_s=5.0)  # +5 tps per second: +20% over the sweep
    result = make_sweeper(target, tmp_path, repeats=2).run()
    means = [p.mean for p in result.points]
    assert (max(means) - min(means)) / min(means) < 0.05


# -- paired sweeps ------------------------------------------------------------------------


def test_a_paired_sweep_brackets_every_visit_with_the_reference() -> None:
    plan = SweepPlan(knob=SIZE, values=(1, 2, 4, 8), repeats=2, dwell_s=4.0, reference=2)
    order = [value for _repeat, value in plan.visits]
    assert order[0::2] == [2] * 7  # before every other size, and once at the end
    assert sorted(order[1::2]) == [1, 1, 4, 4, 8, 8]
    assert plan.expected_duration_s == pytest.approx(len(order) * 4.0)
    with pytest.raises(SweepError, match="reference 3"):
        SweepPlan(knob=SIZE, values=(1, 2, 4), reference=3)


def _switching_level(t: float) -> float:
    """A server that runs at 60% of its level for 20 s of every 43 (a second workload
    coming and going), whatever the pool size."""
    return 0.6 if t % 43.0 < 20.0 else 1.0


def test_a_paired_sweep_reads_through_a_level_that_switches(tmp_path: Path) -> None:
    """A level switching between visits decides a plain sweep's curve; side by side with
    the reference, every size's ratio to it comes out right."""
    curve = {1: 600.0, 2: 900.0, 4: 1000.0, 8: 1080.0, 16: 950.0}
    paired = make_sweeper(
        CurveTarget(curve, level=_switching_level), tmp_path, repeats=3, reference=2
    ).run()
    plain = make_sweeper(CurveTarget(curve, level=_switching_level), tmp_path, repeats=3).run()

    def ratio_errors(result: SweepResult) -> list[float]:
        base = result.point(2).mean
        return [abs(p.mean / base / (curve[p.value] / curve[2]) - 1) for p in result.points]

    assert max(ratio_errors(paired)) < 0.02
    assert max(ratio_errors(plain)) > 0.10  # the control: the switch, not the curve
    assert paired.best_value == 8
    # Every sample stays in the result as measured; only the points are read in pairs.
    assert {s.value for s in paired.samples if s.visit == 0} == {2}
    assert max(s.visit for s in paired.samples) == len(paired.plan.visits) - 1


def test_a_paired_sweep_survives_a_visit_that_measured_nothing(tmp_path: Path) -> None:
    """A stall that zeroes one visit, the reference's or another's, loses that visit only."""
    curve = {1: 600.0, 2: 900.0, 4: 1000.0, 8: 1080.0}

    def stalled(t: float) -> float:
        return 0.0 if 9.0 <= t < 12.0 or 33.0 <= t < 36.0 else 1.0

    result = make_sweeper(
        CurveTarget(curve, level=stalled), tmp_path, values=(1, 2, 4, 8), repeats=3, reference=2
    ).run()
    assert any(s.throughput == 0 and not s.discarded for s in result.samples)
    assert all(p.count > 0 for p in result.points)
    assert result.best_value == 8


def test_a_reference_sunk_by_the_pool_before_it_does_not_inflate_its_neighbours() -> None:
    """Statements queued behind a large pool outlast the discarded second: the default
    visited right after 32 or 64 ran at a tenth of its level (v4's CPU stall mix at 256
    clients). Read beside those visits, 64 came out 80× the default where it ran 4×; set
    aside, every size reads its true ratio, and a level that merely moves is still read
    beside it (the switching-level test above)."""
    curve = {1: 500.0, 2: 800.0, 4: 1600.0, 8: 2400.0, 32: 3000.0, 64: 3200.0}
    plan = SweepPlan(knob=SIZE, values=tuple(curve), repeats=4, reference=2)
    samples = []
    previous = None
    for number, (repeat, value) in enumerate(plan.visits):
        sunk = value == 2 and previous is not None and previous >= 32
        samples.append(
            SweepSample(
                value=value,
                repeat=repeat,
                index=1,
                t_s=2.0 * number,
                duration_s=1.0,
                throughput=curve[value] * (0.1 if sunk else 1.0),
                latency_ms=None,
                discarded=False,
                visit=number,
            )
        )
        previous = value
    points = {p.value: p.mean for p in curve_points(plan.values, samples, reference=2)}
    ratios = {value: points[value] / points[2] for value in curve}
    for value, truth in curve.items():
        assert ratios[value] == pytest.approx(truth / curve[2], rel=0.02), (value, ratios)


@pytest.mark.parametrize("reference", [2, None])
def test_a_stored_paired_sweep_is_read_again_from_its_samples(
    tmp_path: Path, reference: int | None
) -> None:
    """A stored case follows the current reading of pairs: its points come from its kept
    samples, not from the points stored when it was measured. A plain sweep's stored
    points are its samples as kept, and stay."""
    result = make_sweeper(
        CurveTarget(level=_switching_level), tmp_path, repeats=3, reference=reference
    ).run()
    stored = sweep_to_json(result)
    for point in stored["points"]:
        point["samples"] = [1.0]  # as an older reading might have stored them
    loaded = sweep_from_json(json.loads(json.dumps(stored)))
    means = {p.value: p.mean for p in loaded.points}
    if reference is None:
        assert set(means.values()) == {1.0}
    else:
        assert means == pytest.approx({p.value: p.mean for p in result.points}, rel=1e-3)
    assert loaded.samples == result.samples


def test_each_sample_keeps_whether_the_pool_stalled(tmp_path: Path) -> None:
    """The sweep keeps, per sample, what the target read of a stall (the climber's
    ``Sample.stalled``) and how often the pool woke stalled groups, stores them, and reads
    them back; a target without the counters reads None, as sweeps stored before they were
    kept do."""
    result = make_sweeper(CurveTarget(stalling=frozenset({8, 16})), tmp_path).run()
    kept = [s for s in result.samples if not s.discarded]
    assert {s.value for s in kept if s.stalled} == {8, 16}
    assert {s.value for s in kept if s.stalled is False} == {1, 2, 4}
    for sample in kept:
        assert sample.stall_wakes == pytest.approx(3.0 if sample.value in (8, 16) else 0.0)
    stored = json.loads(json.dumps(sweep_to_json(result)))
    assert sweep_from_json(stored).samples == result.samples
    fields = stored["sample_fields"]
    new = [fields.index(name) for name in ("stalled", "lock_waits", "stall_wakes")]
    older = dict(stored, sample_fields=[f for i, f in enumerate(fields) if i not in new])
    older["samples"] = [[v for i, v in enumerate(r) if i not in new] for r in stored["samples"]]
    assert {s.stalled for s in sweep_from_json(older).samples} == {None}
    plain = make_sweeper(CurveTarget(), tmp_path).run()
    assert {(s.stalled, s.stall_wakes) for s in plain.samples} == {(None, None)}


# -- lag discard and the measured curve -------------------------------------------------


def test_discarding_the_first_sample_removes_the_actuation_lag(tmp_path: Path) -> None:
    distinct = {1: 500.0, 2: 900.0, 4: 1000.0, 8: 1100.0, 16: 800.0}
    target = CurveTarget(distinct, lag_s=0.5)
    result = make_sweeper(target, tmp_path, discard_samples=1).run()
    for point in result.points:
        assert point.count == 2 * 3  # 2 repeats × (4 samples − 1 dropped)
        assert point.mean == pytest.approx(distinct[point.value])
        assert point.std == pytest.approx(0.0, abs=1e-6)
    first_samples = [s for s in result.samples if s.index == 0]
    assert all(s.discarded for s in first_samples)
    # The dropped samples really were mixed: half a second at the previous size.
    mixed = [s for s in first_samples if s.throughput != pytest.approx(distinct[s.value])]
    assert len(mixed) == len(first_samples)


def test_keeping_the_first_sample_biases_the_curve(tmp_path: Path) -> None:
    result = make_sweeper(CurveTarget(lag_s=0.5), tmp_path, discard_samples=0).run()
    assert result.point(1).mean > CURVE[1]  # pulled up by the neighbours' lag
    assert result.point(1).std > 0


def test_result_best_knee_noise_and_profile(tmp_path: Path) -> None:
    progress: list[Progress] = []
    target = CurveTarget(lag_s=0.3)
    result = make_sweeper(target, tmp_path, on_progress=progress.append, baseline_s=4.0).run()
    assert result.best_value == 4  # 4 and 8 tie at 1000: the smaller wins
    assert result.best_mean == pytest.approx(1000.0)
    assert result.knee == 4  # 2 gives 900 < 950
    assert result.best_within_noise == 4  # noise-free: only exact ties are within noise
    assert result.noise == pytest.approx(0.0, abs=1e-6)
    assert result.profile is not None and result.profile.connections == 16
    assert result.baseline_profile is not None
    assert result.baseline_profile.tps == pytest.approx(CURVE[2])  # before the first change
    assert [p.visit for p in progress] == list(range(1, 11))
    assert progress[-1].remaining_s == 0
    assert result.original_tuple == {SIZE: 2}


# -- restore ----------------------------------------------------------------------------


def test_original_tuple_is_restored_and_the_state_file_removed(tmp_path: Path) -> None:
    target = CurveTarget(size=3)
    sweeper = make_sweeper(target, tmp_path)
    result = sweeper.run()
    assert target.knobs[SIZE] == 3
    assert target.applied[-1] == {SIZE: 3}
    assert result.restored == {SIZE: 3}
    assert not sweeper.state.exists()


def test_original_tuple_is_restored_when_the_sweep_fails(tmp_path: Path) -> None:
    target = CurveTarget(size=3, fail_on_read=6)
    sweeper = make_sweeper(target, tmp_path)
    with pytest.raises(RuntimeError, match="collector exploded"):
        sweeper.run()
    assert len(target.applied) >= 2  # it did change the size before failing
    assert target.knobs[SIZE] == 3
    assert not sweeper.state.exists()


def test_a_failed_read_loses_its_samples_and_the_sweep_goes_on(tmp_path: Path) -> None:
    target = CurveTarget(size=3, unavailable_reads=frozenset({8, 30}))
    sweeper = make_sweeper(target, tmp_path)
    result = sweeper.run()
    assert sweeper.failed_reads == 2
    assert any("2 counter read(s) failed" in note for note in result.notes)
    assert sum(p.count for p in result.points) < 5 * 2 * 3  # some samples lost ...
    for point in result.points:  # ... but none is wrong
        assert point.count > 0
        assert point.mean == pytest.approx(CURVE[point.value])
    assert target.knobs[SIZE] == 3


def test_a_database_that_stays_away_ends_the_sweep_and_restores(tmp_path: Path) -> None:
    target = CurveTarget(size=3, unavailable_reads=frozenset(range(6, 12)))
    sweeper = make_sweeper(target, tmp_path)
    with pytest.raises(TargetUnavailable):
        sweeper.run()
    assert target.knobs[SIZE] == 3
    assert not sweeper.state.exists()


def test_stop_event_interrupts_and_restores(tmp_path: Path) -> None:
    target = CurveTarget(size=3)
    sweeper = make_sweeper(target, tmp_path)
    waits = 0

    def wait(seconds: float) -> bool:
        nonlocal waits
        waits += 1
        target.wait(seconds)
        return waits >= 7  # as if SIGTERM arrived in the second visit

    sweeper.wait = wait
    with pytest.raises(SweepInterrupted, match="interrupted at thread_pool_size=2"):
        sweeper.run()
    assert target.knobs[SIZE] == 3
    assert not sweeper.state.exists()


def test_the_state_file_holds_the_original_while_the_sweep_runs(tmp_path: Path) -> None:
    """What makes `pooltune-agent restore` undo a sweep killed with -9."""
    target = CurveTarget(size=3)
    seen: list[dict[str, object]] = []
    sweeper = make_sweeper(target, tmp_path)
    sweeper.on_progress = lambda _: seen.append(json.loads(sweeper.state.path.read_text()))
    sweeper.run()
    assert seen and all(doc["original_tuple"] == {SIZE: 3} for doc in seen)


def test_a_leftover_state_file_is_restored_before_sweeping(tmp_path: Path) -> None:
    target = CurveTarget(size=40)  # a crashed run left 40 in force; 6 was the original
    state = OriginalTupleFile(tmp_path / "original-tuple.json")
    state.save(Engine.MARIADB, {SIZE: 6})
    document = json.loads(state.path.read_text())
    document["pid"] = 2**22 + 12345  # a pid that does not exist
    state.path.write_text(json.dumps(document))
    result = make_sweeper(target, tmp_path).run()
    assert result.original_tuple == {SIZE: 6}
    assert target.knobs[SIZE] == 6


def test_a_running_agent_blocks_the_sweep(tmp_path: Path) -> None:
    target = CurveTarget(size=40)
    state = OriginalTupleFile(tmp_path / "original-tuple.json")
    state.save(Engine.MARIADB, {SIZE: 6})
    document = json.loads(state.path.read_text())
    document["pid"] = os.getppid()  # alive, and not us
    state.path.write_text(json.dumps(document))
    with pytest.raises(SweepError, match="stop the agent"):
        make_sweeper(target, tmp_path).run()
    assert target.applied == []


def test_plan_refuses_a_dwell_with_nothing_left_after_the_discard() -> None:
    with pytest.raises(SweepError, match="longer --dwell"):
        SweepPlan(knob=SIZE, values=(1, 2), dwell_s=2.0, sample_period_s=2.0, discard_samples=1)
    with pytest.raises(SweepError, match="duplicate"):
        SweepPlan(knob=SIZE, values=(1, 1))


# -- the arithmetic ---------------------------------------------------------------------


def test_knee_best_and_noise_from_points() -> None:
    points = [
        Point(1, (480.0, 520.0)),
        Point(2, (940.0, 960.0, 950.0)),
        Point(4, (990.0, 1010.0)),
        Point(8, (1000.0, 1000.0)),
    ]
    assert best_value(points) == 4  # tie at 1000: the smaller
    assert knee_value(points) == 2  # 950 ≥ 95% of 1000
    assert noise_level(points) == pytest.approx(
        sorted([p.cv for p in points])[1:3][0] / 2 + sorted([p.cv for p in points])[1:3][1] / 2
    )
    assert points[0].cv == pytest.approx(math.sqrt(800) / 500)


def test_smallest_within_noise_uses_the_standard_error() -> None:
    noisy = [Point(1, (900.0, 1100.0, 950.0, 1050.0)), Point(8, (1040.0, 1060.0, 1050.0))]
    assert within_noise(noisy[0], noisy[1])
    assert smallest_within_noise(noisy) == 1
    tight = [Point(1, (940.0, 941.0, 942.0)), Point(8, (1000.0, 1001.0, 1002.0))]
    assert not within_noise(tight[0], tight[1])
    assert smallest_within_noise(tight) == 8


def test_a_heavy_tailed_best_does_not_tie_with_a_size_that_lost_most_of_it() -> None:
    """A server that stalls for seconds: the best size's samples run from 50 to 9000, so its
    standard error ties it with a size that measured a tenth of its mean; within 5 % of it
    still ties."""
    stalls = (50.0, 60.0, 9000.0, 80.0, 5000.0, 70.0)
    points = [Point(1, (200.0, 210.0, 190.0, 205.0)), Point(6, stalls)]
    assert within_noise(points[0], points[1])
    assert smallest_within_noise(points) == 6
    near = [Point(4, tuple(0.96 * v for v in stalls)), Point(6, stalls)]
    assert smallest_within_noise(near) == 4
    assert smallest_within_noise(points, tie_loss=1.0) == 1


# -- output -----------------------------------------------------------------------------


def test_csv_table_and_plot(tmp_path: Path) -> None:
    result = make_sweeper(CurveTarget(lag_s=0.3, stalling=frozenset({16})), tmp_path).run()
    curve_path, samples_path = write_csv(result, tmp_path / "out" / "curve.csv")
    assert samples_path == samples_csv_path(curve_path)
    rows = list(csv.DictReader(curve_path.open()))
    assert [int(r["value"]) for r in rows] == [1, 2, 4, 8, 16]
    assert float(rows[0]["throughput_mean"]) == pytest.approx(500.0)
    assert [r["is_best"] for r in rows] == ["0", "0", "1", "0", "0"]
    samples = list(csv.DictReader(samples_path.open()))
    assert len(samples) == 5 * 2 * 4
    assert sum(r["discarded"] == "1" for r in samples) == 10
    assert {r["value"] for r in samples if r["stalled"] == "1" and r["index"] != "0"} == {"16"}
    table = format_table(result)
    assert "best" in table and "knee" in table and "restored" in table
    png = write_plot(result, tmp_path / "out" / "curve.png")
    assert png is not None and png.read_bytes()[:4] == b"\x89PNG"


def test_plot_is_skipped_without_matplotlib(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    result = make_sweeper(CurveTarget(), tmp_path, values=(1, 2)).run()
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with caplog.at_level("INFO", logger="agents.sweep"):
        assert write_plot(result, tmp_path / "curve.png") is None
    assert not (tmp_path / "curve.png").exists()
    assert "matplotlib is not installed" in caplog.text


# -- the command ------------------------------------------------------------------------


def _config(tmp_path: Path, bounds: str = "") -> Path:
    path = tmp_path / "agent.toml"
    path.write_text(
        f'[agent]\nstate_dir = "{tmp_path / "state"}"\nsample_period_s = 0.1\n'
        f'[target]\nhost = "127.0.0.1"\nport = 3306\n{bounds}'
    )
    return path


def test_cli_sweeps_writes_files_and_restores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    target = CurveTarget(size=3, real_time=True)
    monkeypatch.setattr(sweep_cli, "make_target", lambda config, knobs: target)
    out = tmp_path / "sweep.csv"
    code = sweep_cli.main(
        [
            "sweep",
            "--config",
            str(_config(tmp_path)),
            "--values",
            "1,2,4",
            "--dwell",
            "0.3",
            "--repeats",
            "2",
            "--discard",
            "1",
            "--out",
            str(out),
            "--yes",
        ]
    )
    assert code == 0
    assert target.knobs[SIZE] == 3
    assert out.exists() and samples_csv_path(out).exists()
    assert out.with_suffix(".png").exists()
    assert json.loads(out.with_name("sweep-profile.json").read_text())["knob"] == SIZE
    printed = capsys.readouterr().out
    assert "thread_pool_size" in printed and f"wrote {out}" in printed


def test_cli_refuses_values_outside_the_bounds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, "[bounds]\nthread_pool_size = [1, 16]\n")
    code = sweep_cli.main(["sweep", "-c", str(config), "--values", "1,32", "--yes"])
    assert code == EXIT_CONFIG
    assert "outside the bounds [1, 16]" in capsys.readouterr().err


def test_cli_needs_yes_when_not_interactive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys.stdin, "isatty", lambda: False)
    code = sweep_cli.main(["sweep", "-c", str(_config(tmp_path)), "--values", "1,2"])
    assert code == EXIT_CONFIG
    assert "pass --yes" in capsys.readouterr().err


def test_cli_rejects_a_bad_value_list(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        sweep_cli.main(["sweep", "--values", "1,,x", "--yes"])
    assert exit_info.value.code == 2
    assert "comma list" in capsys.readouterr().err


def test_cli_default_grid_is_cut_to_the_bounds(tmp_path: Path) -> None:
    config = _config(tmp_path, "[bounds]\nthread_pool_size = [2, 16]\n")
    parser = __import__("argparse").ArgumentParser()
    sweep_cli.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["sweep", "-c", str(config)])
    from agents.config import load_config

    plan = sweep_cli.build_plan(load_config(config), args)
    assert plan.values == (2, 3, 4, 6, 8, 12, 16)
    assert plan.sample_period_s == 0.1


def test_cli_reference_pairs_the_sweep_and_joins_the_grid(tmp_path: Path) -> None:
    config = _config(tmp_path, "[bounds]\nthread_pool_size = [1, 16]\n")
    parser = __import__("argparse").ArgumentParser()
    sweep_cli.add_parser(parser.add_subparsers(dest="command"))
    from agents.config import load_config

    args = parser.parse_args(["sweep", "-c", str(config), "--values", "1,4,8", "--reference", "2"])
    plan = sweep_cli.build_plan(load_config(config), args)
    assert plan.values == (1, 2, 4, 8) and plan.reference == 2
    outside = parser.parse_args(
        ["sweep", "-c", str(config), "--values", "1,4", "--reference", "32"]
    )
    with pytest.raises(ConfigError, match="outside the bounds"):
        sweep_cli.build_plan(load_config(config), outside)


def test_the_sweeper_waits_on_its_stop_event_by_default(tmp_path: Path) -> None:
    stop = threading.Event()
    stop.set()
    sweeper = make_sweeper(CurveTarget(size=3, real_time=True), tmp_path)
    sweeper.wait = None
    sweeper.stop = stop
    with pytest.raises(SweepInterrupted):
        sweeper.run()
