"""Runs a :class:`~agents.sweep.plan.SweepPlan` on a connected target.

Before the first change the original tuple is saved in the agent's state file: a sweep
that ends, fails or is interrupted puts it back in a ``finally``, and one killed with
``kill -9`` is undone by the next ``pooltune-agent restore`` or ``run``. The first
``discard_samples`` samples after each change are dropped (the change lags).
"""

from __future__ import annotations

import logging
import math
import os
import statistics
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from agents import knobs as knob_catalog
from agents.hostcpu import HostCpu, processes_cpu_seconds
from agents.profile import ProfileError
from agents.profilers import Profiler, target_profiler
from agents.state import OriginalTupleFile, StateError, restore_original
from agents.sweep.curve import SweepResult, SweepSample, curve_points
from agents.sweep.plan import SweepError, SweepInterrupted, SweepPlan
from agents.targets.base import Snapshot, Target, TargetUnavailable
from agents.wire import WorkloadProfile

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _CpuReading:
    host: float | None
    load: float | None


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
        return _CpuReading(host=host, load=processes_cpu_seconds(self.plan.load_pids))

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
        restored: Mapping[str, int | None] | None = None
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
        points = curve_points(plan.values, samples, reference=plan.reference)
        notes: list[str] = []
        if self.failed_reads:
            notes.append(f"{self.failed_reads} counter read(s) failed; their samples are lost")
        profiler = target_profiler(self.target)
        profile = _safe_profile(profiler, snapshots, notes, "sweep")
        baseline_profile = (
            _safe_profile(profiler, baseline, notes, "baseline") if baseline else None
        )
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
    ) -> tuple[list[SweepSample], list[Snapshot], list[Snapshot]]:
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
        profiler = target_profiler(self.target)
        samples: list[Snapshot] = []
        kept: list[SweepSample] = []
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
                    rates = profiler.interval(previous, current)
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
                    SweepSample(
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
                        visit=number,
                        stalled=rates.stalled,
                        lock_waits=rates.lock_waits,
                        stall_wakes=rates.stall_wakes,
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
    profiler: Profiler, snapshots: Sequence[Snapshot], notes: list[str], what: str
) -> WorkloadProfile | None:
    try:
        return profiler.build_profile(snapshots)
    except (ProfileError, ValueError) as exc:
        notes.append(f"no {what} profile: {exc}")
        logger.warning("no %s profile: %s", what, exc)
        return None


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
