"""Sweep one knob over a grid and measure the server's curve: ``pooltune-agent sweep``.

A sweep holds each value of a grid for ``dwell_s`` seconds and samples the throughput
every ``sample_period_s``; the first ``discard_samples`` samples after each change are
dropped (a size change reaches a connection at its next I/O, so the first sample mixes
two values). Noise on a live server is large and drifts over minutes (DESIGN.md), so
the grid is visited ``repeats`` times in interleaved order: repeat 0 walks the grid
forwards, repeat 1 backwards, each later repeat visits first the values measured latest
so far (or a seeded shuffle), so a slow drift spreads over every value instead of
aliasing onto the grid.

Before the first change the original tuple is saved with :class:`OriginalTupleFile`
(the agent's own state file): a sweep that ends, fails or is interrupted puts it back
in a ``finally``, and one killed with ``kill -9`` is undone by the next
``pooltune-agent restore`` or ``run``.

Everything here is arithmetic on snapshots plus a loop with an injectable ``wait``; no
pandas and no matplotlib at import time (the agent extra does not ship them). The PNG
writer imports matplotlib lazily and skips the plot with a logged note when it is absent.
"""

from __future__ import annotations

import csv
import logging
import math
import os
import random
import statistics
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from agents import knobs as knob_catalog
from agents.collectors import process_cpu_seconds
from agents.knobs import Engine
from agents.profile import ProfileError, ThroughputMetric, build_profile, interval
from agents.state import OriginalTupleFile, StateError, restore_original
from agents.targets.base import Snapshot, Target, TargetUnavailable
from agents.wire import WorkloadProfile

logger = logging.getLogger(__name__)

VisitOrder = Literal["balanced", "shuffle"]

#: Default grids per knob (MariaDB / Percona): log-spaced, around the defaults.
DEFAULT_GRIDS: Mapping[str, tuple[int, ...]] = {
    "thread_pool_size": (1, 2, 3, 4, 6, 8, 12, 16, 32, 64),
    "thread_pool_oversubscribe": (1, 2, 3, 5, 10, 30),
    "thread_pool_stall_limit": (10, 50, 100, 500, 2000),
    "default_pool_size": (1, 2, 4, 8, 16, 32, 64, 128),
}

#: The knee is the smallest value reaching this share of the best mean.
KNEE_SHARE = 0.95


class SweepError(Exception):
    """A sweep cannot start or cannot go on; the message says why."""


class SweepInterrupted(SweepError):
    """The stop event was set (SIGINT / SIGTERM); the original tuple has been restored."""


# -- plan -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SweepPlan:
    """What to measure and how long."""

    knob: str
    values: tuple[int, ...]
    dwell_s: float = 6.0
    repeats: int = 3
    sample_period_s: float = 2.0
    #: Samples dropped after each change (actuation lag).
    discard_samples: int = 1
    metric: ThroughputMetric = "transactions"
    order: VisitOrder = "balanced"
    seed: int = 0
    #: Seconds of observation at the original tuple before the first change; the profile
    #: measured there is what an agent would see before it starts (0: none).
    baseline_s: float = 0.0
    #: Processes whose CPU counts as the measured load (e.g. the load generator), so
    #: that the rest of the host's CPU use is attributed to "other" processes.
    load_pids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not self.values:
            raise SweepError("the grid is empty")
        if len(set(self.values)) != len(self.values):
            raise SweepError(f"the grid has duplicate values: {list(self.values)}")
        if self.repeats < 1:
            raise SweepError("repeats must be at least 1")
        if self.sample_period_s <= 0 or self.dwell_s <= 0:
            raise SweepError("dwell and sample period must be positive")
        if self.samples_per_visit <= self.discard_samples:
            raise SweepError(
                f"a dwell of {self.dwell_s:g}s gives {self.samples_per_visit} sample(s) of "
                f"{self.sample_period_s:g}s, none left after discarding "
                f"{self.discard_samples}: use a longer --dwell"
            )

    @property
    def samples_per_visit(self) -> int:
        return max(1, round(self.dwell_s / self.sample_period_s))

    @property
    def visits(self) -> list[tuple[int, int]]:
        """(repeat, value) in measuring order."""
        return [
            (repeat, value)
            for repeat, values in enumerate(
                visit_order(self.values, self.repeats, self.order, seed=self.seed)
            )
            for value in values
        ]

    @property
    def expected_duration_s(self) -> float:
        per_visit = self.samples_per_visit * self.sample_period_s
        return self.baseline_s + per_visit * len(self.values) * self.repeats


def visit_order(
    values: Sequence[int], repeats: int, order: VisitOrder = "balanced", *, seed: int = 0
) -> list[list[int]]:
    """The grid once per repeat, interleaved so that drift does not alias onto the grid.

    ``balanced``: repeat 0 in grid order; every later repeat visits first the values that
    have so far been measured latest on average (ties alternately ascending and
    descending), so repeat 1 is the reverse of repeat 0 (A/B/B/A) and a linear drift
    adds about the same to every value. ``shuffle``: a seeded permutation per repeat.
    In both, a repeat never starts with the value the previous one ended on (that would
    be one long visit, not two), when the grid has more than one value.
    """
    grid = list(values)
    count = len(grid)
    rng = random.Random(seed)
    position_sum = dict.fromkeys(grid, 0)
    passes: list[list[int]] = []
    for repeat in range(repeats):
        if order == "shuffle":
            current = grid[:]
            rng.shuffle(current)
        else:
            ties = grid if repeat % 2 == 0 else grid[::-1]
            rank = {value: index for index, value in enumerate(ties)}
            current = sorted(grid, key=lambda v: (-position_sum[v], rank[v]))
        if passes and count > 1 and current[0] == passes[-1][-1]:
            current[0], current[1] = current[1], current[0]
        for index, value in enumerate(current):
            position_sum[value] += repeat * count + index
        passes.append(current)
    return passes


# -- results ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Sample:
    """One sampling interval of one visit."""

    value: int
    repeat: int
    #: Index of the sample within its visit (0 = right after the change).
    index: int
    #: Seconds since the sweep started (end of the interval).
    t_s: float
    duration_s: float
    throughput: float
    latency_ms: float | None
    discarded: bool
    #: CPU use in cores over the interval: the server, the load generator, everything else.
    server_cpu: float | None = None
    load_cpu: float | None = None
    other_cpu: float | None = None


@dataclass(frozen=True, slots=True)
class Point:
    """The kept samples of one value, over all its visits."""

    value: int
    samples: tuple[float, ...]
    latencies_ms: tuple[float, ...] = ()
    visit_means: tuple[float, ...] = ()
    other_cpu: float | None = None
    server_cpu: float | None = None
    load_cpu: float | None = None

    @property
    def count(self) -> int:
        return len(self.samples)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.samples) if self.samples else math.nan

    @property
    def std(self) -> float:
        return statistics.stdev(self.samples) if len(self.samples) > 1 else math.nan

    @property
    def cv(self) -> float:
        """Coefficient of variation of the samples (std / mean)."""
        mean = self.mean
        if len(self.samples) < 2 or not mean > 0:
            return math.nan
        return self.std / mean

    @property
    def sem(self) -> float:
        """Standard error of the mean (std / √n)."""
        return self.std / math.sqrt(self.count) if self.count > 1 else math.nan

    @property
    def latency_ms(self) -> float | None:
        return statistics.fmean(self.latencies_ms) if self.latencies_ms else None


def _median_or_nan(values: Sequence[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return statistics.median(finite) if finite else math.nan


def knee_value(points: Sequence[Point], share: float = KNEE_SHARE) -> int | None:
    """The smallest value whose mean reaches ``share`` of the best mean."""
    measured = [p for p in points if p.count]
    if not measured:
        return None
    best = max(p.mean for p in measured)
    return min(p.value for p in measured if p.mean >= share * best)


def best_value(points: Sequence[Point]) -> int | None:
    """The value with the highest mean (ties: the smallest value)."""
    measured = [p for p in points if p.count]
    if not measured:
        return None
    return min(measured, key=lambda p: (-p.mean, p.value)).value


def noise_level(points: Sequence[Point]) -> float:
    """The median coefficient of variation of a point's samples."""
    return _median_or_nan([p.cv for p in points if p.count > 1])


#: Two means differ beyond the noise when they are more than this many standard errors
#: of their difference apart.
NOISE_Z = 2.0


def within_noise(point: Point, reference: Point, *, z: float = NOISE_Z) -> bool:
    """Whether ``point``'s mean is not below ``reference``'s by more than the noise:
    ``reference.mean − point.mean ≤ z × √(sem_point² + sem_reference²)``."""
    if not point.count or not reference.count:
        return False
    sem_a = point.sem if math.isfinite(point.sem) else 0.0
    sem_b = reference.sem if math.isfinite(reference.sem) else 0.0
    return reference.mean - point.mean <= z * math.hypot(sem_a, sem_b)


def smallest_within_noise(points: Sequence[Point], *, z: float = NOISE_Z) -> int | None:
    """The smallest value whose mean is within the noise of the best mean (see
    :func:`within_noise`). On a flat top this prefers the cheaper value rather than the
    one the noise happened to favour."""
    measured = [p for p in points if p.count]
    if not measured:
        return None
    best = max(measured, key=lambda p: (p.mean, -p.value))
    return min(p.value for p in measured if within_noise(p, best, z=z))


@dataclass(frozen=True, slots=True)
class SweepResult:
    """A measured curve: one point per value, every sample, and the workload profile."""

    engine: Engine
    plan: SweepPlan
    original_tuple: dict[str, int]
    points: tuple[Point, ...]
    samples: tuple[Sample, ...]
    started_at: datetime
    finished_at: datetime
    #: Over the whole sweep (every snapshot, all values).
    profile: WorkloadProfile | None = None
    #: At the original tuple, before the first change (``plan.baseline_s`` > 0).
    baseline_profile: WorkloadProfile | None = None
    restored: dict[str, int] | None = None
    notes: tuple[str, ...] = ()

    @property
    def knob(self) -> str:
        return self.plan.knob

    @property
    def best_value(self) -> int | None:
        return best_value(self.points)

    @property
    def best_mean(self) -> float:
        best = self.best_value
        return self.point(best).mean if best is not None else math.nan

    @property
    def knee(self) -> int | None:
        return knee_value(self.points)

    @property
    def noise(self) -> float:
        return noise_level(self.points)

    @property
    def best_within_noise(self) -> int | None:
        return smallest_within_noise(self.points)

    def point(self, value: int) -> Point:
        for candidate in self.points:
            if candidate.value == value:
                return candidate
        raise KeyError(value)

    @property
    def other_cpu(self) -> float | None:
        """Mean CPU use (cores) of processes other than the server and the load."""
        values = [s.other_cpu for s in self.samples if s.other_cpu is not None]
        return statistics.fmean(values) if values else None


# -- host CPU ---------------------------------------------------------------------------


class HostCpu:
    """Busy CPU seconds of the whole host, from ``/proc/stat`` (all but idle and iowait)."""

    def __init__(self, proc_root: Path = Path("/proc")) -> None:
        self._stat = proc_root / "stat"
        self._ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def busy_seconds(self) -> float | None:
        try:
            with self._stat.open() as stream:
                first = stream.readline()
        except OSError:
            return None
        fields = first.split()
        if not fields or fields[0] != "cpu":
            return None
        try:
            numbers = [int(v) for v in fields[1:]]
        except ValueError:
            return None
        # user nice system idle iowait irq softirq steal [guest guest_nice: inside user]
        busy = sum(numbers[:8]) - numbers[3] - (numbers[4] if len(numbers) > 4 else 0)
        return busy / self._ticks


@dataclass(frozen=True, slots=True)
class _CpuReading:
    host: float | None
    load: float | None


def _load_cpu_seconds(pids: Sequence[int]) -> float | None:
    if not pids:
        return None
    total = 0.0
    for pid in pids:
        seconds = process_cpu_seconds(pid)
        if seconds is None:
            return None
        total += seconds
    return total


# -- the sweep --------------------------------------------------------------------------

ProgressCallback = Callable[["Progress"], None]


@dataclass(frozen=True, slots=True)
class Progress:
    """Handed to the progress callback after each visit."""

    visit: int
    visits: int
    repeat: int
    value: int
    visit_mean: float
    elapsed_s: float
    remaining_s: float


@dataclass
class Sweeper:
    """Runs a :class:`SweepPlan` on a connected target and restores the original tuple.

    ``wait(seconds)`` sleeps and returns True when the sweep must stop (the default waits
    on ``stop``); tests inject a fake that advances a fake target's clock instead.
    """

    target: Target
    plan: SweepPlan
    state: OriginalTupleFile
    stop: threading.Event = field(default_factory=threading.Event)
    on_progress: ProgressCallback | None = None
    wait: Callable[[float], bool] | None = None
    host_cpu: HostCpu | None = field(default_factory=HostCpu)
    #: Values to hold on other knobs during the sweep (restored with the swept knob).
    hold: Mapping[str, int] = field(default_factory=dict)
    #: Failed counter reads in a row that end the sweep (fewer only lose samples).
    max_failures: int = 3
    failed_reads: int = field(default=0, init=False)
    _failures_in_a_row: int = field(default=0, init=False, repr=False)

    def _read(self, value: int) -> Snapshot | None:
        """One snapshot, or None when the database failed this once (a stall longer than
        the statement timeout, a dropped connection): that sample is lost, the sweep goes
        on. More than ``max_failures`` failures in a row end the sweep."""
        try:
            snapshot = self.target.read_counters()
        except TargetUnavailable as exc:
            self.failed_reads += 1
            self._failures_in_a_row += 1
            if self._failures_in_a_row > self.max_failures:
                raise
            logger.warning(
                "reading counters at %s=%s failed (%s); that sample is lost",
                self.plan.knob,
                value,
                exc,
            )
            return None
        self._failures_in_a_row = 0
        return snapshot

    def _wait(self, seconds: float) -> bool:
        if self.wait is not None:
            return self.wait(seconds)
        return self.stop.wait(seconds)

    def _cpu(self) -> _CpuReading:
        host = self.host_cpu.busy_seconds() if self.host_cpu is not None else None
        return _CpuReading(host=host, load=_load_cpu_seconds(self.plan.load_pids))

    def _prepare_state(self, names: list[str]) -> dict[str, int]:
        """Undo a leftover state file (a crashed sweep or agent), then save ours."""
        saved = self.state.load()
        if saved is not None:
            if saved.pid != os.getpid() and _pid_alive(saved.pid):
                raise SweepError(
                    f"process {saved.pid} is tuning this server (state file {self.state.path}); "
                    "stop the agent before sweeping"
                )
            logger.warning(
                "a previous run left %s changed; restoring %s first", self.state.path, saved.values
            )
            restore_original(self.target, self.state)
        original = self.target.current_tuple(names)
        self.state.save(self.target.engine, original)
        return original

    def run(self) -> SweepResult:
        plan = self.plan
        knob_catalog.knob(self.target.engine, plan.knob)  # refuses unknown knobs early
        names = [plan.knob, *[name for name in self.hold if name != plan.knob]]
        started_at = datetime.now(UTC)
        original = self._prepare_state(names)
        restored: dict[str, int] | None = None
        try:
            outcome = self._measure(original)
        finally:
            try:
                restored = restore_original(self.target, self.state)
            except Exception:
                logger.exception(
                    "could not restore the original tuple %s: run `pooltune-agent restore` "
                    "(the state file %s stays)",
                    original,
                    self.state.path,
                )
                raise
            logger.info("original tuple restored: %s", restored)
        samples, snapshots, baseline = outcome
        points = _points(plan.values, samples)
        notes: list[str] = []
        if self.failed_reads:
            notes.append(f"{self.failed_reads} counter read(s) failed; their samples are lost")
        profile = _safe_profile(snapshots, notes, "sweep")
        baseline_profile = _safe_profile(baseline, notes, "baseline") if baseline else None
        return SweepResult(
            engine=self.target.engine,
            plan=plan,
            original_tuple=original,
            points=points,
            samples=tuple(samples),
            started_at=started_at,
            finished_at=datetime.now(UTC),
            profile=profile,
            baseline_profile=baseline_profile,
            restored=restored,
            notes=tuple(notes),
        )

    def _measure(
        self, original: Mapping[str, int]
    ) -> tuple[list[Sample], list[Snapshot], list[Snapshot]]:
        plan = self.plan
        baseline: list[Snapshot] = []
        if plan.baseline_s > 0:
            baseline.append(self.target.read_counters())
            steps = max(1, round(plan.baseline_s / plan.sample_period_s))
            for _ in range(steps):
                if self._wait(plan.sample_period_s):
                    raise SweepInterrupted("interrupted during the baseline window")
                baseline.append(self.target.read_counters())
        if self.hold:
            self.target.apply({k: v for k, v in self.hold.items() if k != plan.knob})
        visits = plan.visits
        samples: list[Snapshot] = []
        kept: list[Sample] = []
        origin: float | None = None
        per_visit = plan.samples_per_visit * plan.sample_period_s
        for number, (repeat, value) in enumerate(visits):
            read_back = self.target.apply({plan.knob: value})
            if read_back.get(plan.knob) != value:
                logger.warning("%s=%s reads back %s", plan.knob, value, read_back.get(plan.knob))
            previous = self._read(value)
            cpu_before = self._cpu()
            if previous is not None:
                samples.append(previous)
            visit_values: list[float] = []
            for index in range(plan.samples_per_visit):
                if self._wait(plan.sample_period_s):
                    raise SweepInterrupted(
                        f"interrupted at {plan.knob}={value} (visit {number + 1}/{len(visits)})"
                    )
                current = self._read(value)
                cpu_after = self._cpu()
                if current is None:
                    previous = None  # the interval around a failed read is lost
                    continue
                samples.append(current)
                if origin is None:
                    origin = samples[0].taken_at
                if previous is None:
                    previous, cpu_before = current, cpu_after
                    continue
                try:
                    rates = interval(previous, current)
                except ProfileError as exc:
                    logger.warning("sample dropped at %s=%s: %s", plan.knob, value, exc)
                    previous, cpu_before = current, cpu_after
                    continue
                server_cpu = rates.cpu_busy
                load_cpu = _rate(cpu_before.load, cpu_after.load, rates.duration_s)
                host_cpu = _rate(cpu_before.host, cpu_after.host, rates.duration_s)
                other_cpu = None
                if host_cpu is not None and server_cpu is not None:
                    other_cpu = max(0.0, host_cpu - server_cpu - (load_cpu or 0.0))
                throughput = rates.throughput(plan.metric)
                discarded = index < plan.discard_samples
                kept.append(
                    Sample(
                        value=value,
                        repeat=repeat,
                        index=index,
                        t_s=current.taken_at - origin,
                        duration_s=rates.duration_s,
                        throughput=throughput,
                        latency_ms=rates.latency_ms,
                        discarded=discarded,
                        server_cpu=server_cpu,
                        load_cpu=load_cpu,
                        other_cpu=other_cpu,
                    )
                )
                if not discarded:
                    visit_values.append(throughput)
                previous, cpu_before = current, cpu_after
            if self.on_progress is not None:
                done = number + 1
                self.on_progress(
                    Progress(
                        visit=done,
                        visits=len(visits),
                        repeat=repeat,
                        value=value,
                        visit_mean=statistics.fmean(visit_values) if visit_values else math.nan,
                        elapsed_s=(samples[-1].taken_at - origin) if origin is not None else 0.0,
                        remaining_s=(len(visits) - done) * per_visit,
                    )
                )
        return kept, samples, baseline


def _rate(before: float | None, after: float | None, duration_s: float) -> float | None:
    if before is None or after is None or duration_s <= 0:
        return None
    return max(0.0, after - before) / duration_s


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _safe_profile(
    snapshots: Sequence[Snapshot], notes: list[str], what: str
) -> WorkloadProfile | None:
    try:
        return build_profile(snapshots)
    except (ProfileError, ValueError) as exc:
        notes.append(f"no {what} profile: {exc}")
        logger.warning("no %s profile: %s", what, exc)
        return None


def _mean_or_none(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def _points(values: Sequence[int], samples: Sequence[Sample]) -> tuple[Point, ...]:
    points = []
    for value in values:
        mine = [s for s in samples if s.value == value and not s.discarded]
        visit_means = []
        for repeat in sorted({s.repeat for s in mine}):
            visit = [s.throughput for s in mine if s.repeat == repeat]
            visit_means.append(statistics.fmean(visit))
        points.append(
            Point(
                value=value,
                samples=tuple(s.throughput for s in mine),
                latencies_ms=tuple(s.latency_ms for s in mine if s.latency_ms is not None),
                visit_means=tuple(visit_means),
                other_cpu=_mean_or_none([s.other_cpu for s in mine]),
                server_cpu=_mean_or_none([s.server_cpu for s in mine]),
                load_cpu=_mean_or_none([s.load_cpu for s in mine]),
            )
        )
    return tuple(points)


def run_sweep(
    target: Target,
    plan: SweepPlan,
    *,
    state: OriginalTupleFile,
    stop: threading.Event | None = None,
    on_progress: ProgressCallback | None = None,
    hold: Mapping[str, int] | None = None,
) -> SweepResult:
    """Measure ``plan`` on a connected ``target``; the original tuple is always restored."""
    sweeper = Sweeper(
        target=target,
        plan=plan,
        state=state,
        stop=stop or threading.Event(),
        on_progress=on_progress,
        hold=dict(hold or {}),
    )
    try:
        return sweeper.run()
    except StateError as exc:
        raise SweepError(str(exc)) from exc


# -- output -----------------------------------------------------------------------------

CURVE_CSV_COLUMNS = (
    "knob",
    "value",
    "throughput_mean",
    "throughput_std",
    "cv",
    "samples",
    "latency_ms",
    "other_cpu_cores",
    "is_best",
    "is_knee",
    "is_smallest_within_noise",
)
SAMPLE_CSV_COLUMNS = (
    "knob",
    "value",
    "repeat",
    "index",
    "t_s",
    "duration_s",
    "throughput",
    "latency_ms",
    "discarded",
    "server_cpu_cores",
    "load_cpu_cores",
    "other_cpu_cores",
)


def _cell(value: float | int | None) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if not math.isfinite(value) else f"{value:.6g}"
    return str(value)


def samples_csv_path(curve_csv: Path) -> Path:
    return curve_csv.with_name(f"{curve_csv.stem}-samples.csv")


def write_csv(result: SweepResult, path: Path) -> tuple[Path, Path]:
    """The curve (one row per value) at ``path`` and every sample beside it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    best, knee, within = result.best_value, result.knee, result.best_within_noise
    with path.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(CURVE_CSV_COLUMNS)
        for p in result.points:
            writer.writerow(
                [
                    result.knob,
                    p.value,
                    _cell(p.mean),
                    _cell(p.std),
                    _cell(p.cv),
                    p.count,
                    _cell(p.latency_ms),
                    _cell(p.other_cpu),
                    int(p.value == best),
                    int(p.value == knee),
                    int(p.value == within),
                ]
            )
    samples_path = samples_csv_path(path)
    with samples_path.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(SAMPLE_CSV_COLUMNS)
        for s in result.samples:
            writer.writerow(
                [
                    result.knob,
                    s.value,
                    s.repeat,
                    s.index,
                    _cell(s.t_s),
                    _cell(s.duration_s),
                    _cell(s.throughput),
                    _cell(s.latency_ms),
                    int(s.discarded),
                    _cell(s.server_cpu),
                    _cell(s.load_cpu),
                    _cell(s.other_cpu),
                ]
            )
    return path, samples_path


def write_plot(result: SweepResult, path: Path, *, title: str | None = None) -> Path | None:
    """A PNG of the curve (mean ± std, every kept sample, best and knee marked).

    Returns None, with a logged note, when matplotlib is not installed (it comes with the
    trainer extra, not the agent's).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        logger.info("matplotlib is not installed: no plot (pip install 'pooltune[trainer]')")
        return None
    figure, axes = plt.subplots(figsize=(7, 4.2), dpi=110)
    try:
        measured = [p for p in result.points if p.count]
        xs = [p.value for p in measured]
        for p in measured:
            axes.scatter([p.value] * p.count, p.samples, s=8, color="0.6", zorder=1)
        axes.errorbar(
            xs,
            [p.mean for p in measured],
            yerr=[0.0 if math.isnan(p.std) else p.std for p in measured],
            marker="o",
            capsize=3,
            zorder=2,
            label="mean ± std",
        )
        if result.best_value is not None:
            axes.axvline(result.best_value, color="tab:green", linestyle="--", label="best")
        if result.knee is not None:
            axes.axvline(result.knee, color="tab:orange", linestyle=":", label="knee (95%)")
        if xs and min(xs) > 0 and max(xs) / min(xs) >= 8:
            axes.set_xscale("log", base=2)
            axes.set_xticks(xs, [str(x) for x in xs])
        axes.set_xlabel(result.knob)
        unit = "transactions/s" if result.plan.metric == "transactions" else "queries/s"
        axes.set_ylabel(unit)
        noise = result.noise
        noise_text = f"noise (median CV) {noise:.1%}" if math.isfinite(noise) else ""
        axes.set_title(title or f"{result.knob} sweep  {noise_text}", fontsize=10)
        axes.set_ylim(bottom=0)
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8, loc="lower right")
        figure.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path)
    finally:
        plt.close(figure)
    return path


def format_table(result: SweepResult, *, width: int = 30) -> str:
    """The curve as a text table for the terminal, with a bar per value."""
    unit = "tps" if result.plan.metric == "transactions" else "qps"
    best, knee, within = result.best_value, result.knee, result.best_within_noise
    top = max((p.mean for p in result.points if p.count), default=0.0)
    has_latency = any(p.latency_ms is not None for p in result.points)
    header = f"{result.knob:>24} {'mean ' + unit:>12} {'std':>9} {'cv':>6} {'n':>4}"
    if has_latency:
        header += f" {'lat ms':>8}"
    lines = [header, "-" * (len(header) + width + 2)]
    for p in result.points:
        if not p.count:
            lines.append(f"{p.value:>24} {'(no samples)':>12}")
            continue
        marks = []
        if p.value == best:
            marks.append("best")
        if p.value == within and within != best:
            marks.append("smallest within noise")
        if p.value == knee:
            marks.append("knee")
        bar = "#" * (round(width * p.mean / top) if top > 0 else 0)
        cv = f"{p.cv:.1%}" if math.isfinite(p.cv) else "-"
        std = f"{p.std:.1f}" if math.isfinite(p.std) else "-"
        line = f"{p.value:>24} {p.mean:>12.1f} {std:>9} {cv:>6} {p.count:>4}"
        if has_latency:
            line += f" {p.latency_ms:>8.2f}" if p.latency_ms is not None else f" {'-':>8}"
        lines.append(f"{line}  {bar:<{width}} {', '.join(marks)}".rstrip())
    noise = result.noise
    lines.append("")
    lines.append(
        f"best {result.knob}={best}, smallest within the noise={within}, knee={knee}; "
        f"noise (median CV of a point) " + (f"{noise:.1%}" if math.isfinite(noise) else "unknown")
    )
    other = result.other_cpu
    if other is not None:
        lines.append(f"other processes used {other:.2f} cores on average during the sweep")
    lines.append(f"original tuple restored: {result.restored}")
    return "\n".join(lines)
