"""A measured curve: the samples of a sweep, one point per value, and the noise test.

The statistics here are plain arithmetic on throughput samples, so anything that measures
a curve by interleaved visits (the sweep, a benchmark's own observer) can use them.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from agents.knobs import Engine
from agents.sweep.plan import SweepPlan
from agents.wire import WorkloadProfile

#: The knee is the smallest value reaching this share of the best mean.
KNEE_SHARE = 0.95


@dataclass(frozen=True, slots=True)
class SweepSample:
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
    #: The visit's number in the sweep (0 first): a paired sweep's reference is visited
    #: many times in one repeat, so the repeat alone does not tell its visits apart.
    visit: int = 0
    #: What the target read of the pool in the interval (:class:`agents.profile.Interval`):
    #: it stalled (MariaDB: ``THREAD_POOL_STATS`` stalls rose or a group is stalled),
    #: row-lock waits, and stalled groups woken per second. None where the engine cannot
    #: tell, and in sweeps stored before these were kept. The climb benchmark's replays
    #: hand the stall flag to the climber as a live agent's loop does.
    stalled: bool | None = None
    lock_waits: float | None = None
    stall_wakes: float | None = None


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


#: A value ties with the best only if its mean also loses at most this share of the best's:
#: the knee's 95%, and the "within 5% of the best" the trainer scores with.
TIE_LOSS = 1.0 - KNEE_SHARE


def smallest_within_noise(
    points: Sequence[Point], *, z: float = NOISE_Z, tie_loss: float = TIE_LOSS
) -> int | None:
    """The smallest value whose mean is within the noise of the best mean (see
    :func:`within_noise`) and loses at most ``tie_loss`` of it (so never below the knee). On
    a flat top this prefers the cheaper value rather than the one the noise happened to
    favour; the loss bound keeps a heavy-tailed best (a server that stalls for seconds:
    standard errors as large as the mean) from tying with a size that measured a tenth of
    it."""
    measured = [p for p in points if p.count]
    if not measured:
        return None
    best = max(measured, key=lambda p: (p.mean, -p.value))
    return min(
        p.value
        for p in measured
        if within_noise(p, best, z=z) and p.mean >= (1.0 - tie_loss) * best.mean
    )


@dataclass(frozen=True, slots=True)
class SweepResult:
    """A measured curve: one point per value, every sample, and the workload profile."""

    engine: Engine
    plan: SweepPlan
    original_tuple: dict[str, int]
    points: tuple[Point, ...]
    samples: tuple[SweepSample, ...]
    started_at: datetime
    finished_at: datetime
    #: Over the whole sweep (every snapshot, all values).
    profile: WorkloadProfile | None = None
    #: At the original tuple, before the first change (``plan.baseline_s`` > 0).
    baseline_profile: WorkloadProfile | None = None
    restored: Mapping[str, int | None] | None = None
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


def _mean_or_none(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def curve_points(
    values: Sequence[int], samples: Sequence[SweepSample], *, reference: int | None = None
) -> tuple[Point, ...]:
    """One point per value of the grid, from the samples that were not discarded; for a
    paired sweep (``reference``) each throughput is first read side by side with the
    reference (:func:`paired_levels`)."""
    kept = [s for s in samples if not s.discarded]
    if reference is not None:
        factors = paired_levels(kept, reference)
        kept = [
            replace(s, throughput=s.throughput * factors[s.visit])
            for s in kept
            if s.visit in factors
        ]
    points = []
    for value in values:
        mine = [s for s in kept if s.value == value]
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


def _visits(
    kept: Sequence[SweepSample],
) -> tuple[dict[int, list[SweepSample]], dict[int, float]]:
    """The kept samples by visit number, and each visit's mean throughput."""
    by_visit: dict[int, list[SweepSample]] = {}
    for sample in kept:
        by_visit.setdefault(sample.visit, []).append(sample)
    means = {n: statistics.fmean(s.throughput for s in group) for n, group in by_visit.items()}
    return by_visit, means


def reference_beside(kept: Sequence[SweepSample], reference: int) -> dict[int, tuple[float, float]]:
    """Per value of a paired sweep, the reference's mean over its visits right after and
    right before that value's visits, each over the reference's mean over the whole sweep.

    Near 1 where the pairing holds. Far below 1 where a value leaves (or, before it, where
    the previous one left) a state that outlasts the discarded samples: queued statements
    after a large pool at hundreds of clients sink the reference beside it, and the paired
    ratio divides by that (docs/datasets.md, "Paired 2-s visits carry a large pool's state")."""
    by_visit, means = _visits(kept)
    value_of = {n: group[0].value for n, group in by_visit.items()}
    own = [means[n] for n in means if value_of[n] == reference]
    overall = statistics.fmean(own) if own else math.nan
    if not overall > 0:
        return {}
    after: dict[int, list[float]] = {}
    before: dict[int, list[float]] = {}
    for number, value in value_of.items():
        if value != reference:
            continue
        if value_of.get(number - 1, reference) != reference:
            after.setdefault(value_of[number - 1], []).append(means[number])
        if value_of.get(number + 1, reference) != reference:
            before.setdefault(value_of[number + 1], []).append(means[number])
    return {
        value: (statistics.fmean(after[value]) / overall, statistics.fmean(before[value]) / overall)
        for value in sorted(after.keys() & before.keys())
    }


#: A visit whose two reference visits disagree by more than this many times the sweep's
#: median disagreement saw the server's level change while it ran (its ratio is unknown).
SPLIT_FACTOR = 3.0
#: ... and by at least this much in log throughput (a noise-free sweep's median is 0).
SPLIT_FLOOR = 0.02


#: A reference visit under this share of the median reference visit of its pass and the
#: passes either side is set aside: it measured a state the visit before it left
#: (statements queued behind a large pool, seconds long at hundreds of clients: a tenth of
#: the level) or a stall, not the server's level. A level that moves (a phase of the load,
#: a second load) moves the visits beside it too; v4's phased load moved it 3.4×.
SUNK_REFERENCE = 0.25


def sunk_references(
    by_visit: Mapping[int, Sequence[SweepSample]], means: Mapping[int, float], reference: int
) -> set[int]:
    """The reference visits of a paired sweep that sank under :data:`SUNK_REFERENCE` of
    the median reference visit around them (their pass and the passes either side: a pass
    may visit several large pools in a row): read beside them, the visits next to them
    would be inflated by the sink (docs/datasets.md, "Paired 2-s visits carry a large
    pool's state into the default beside it"). ``by_visit`` and ``means``: as
    :func:`_visits` gives them."""
    passes: dict[int, list[float]] = {}
    for number, group in by_visit.items():
        if group[0].value == reference:
            passes.setdefault(group[0].repeat, []).append(means[number])
    sunk = set()
    for number, group in by_visit.items():
        if group[0].value != reference:
            continue
        repeat = group[0].repeat
        around = [m for r in (repeat - 1, repeat, repeat + 1) for m in passes.get(r, [])]
        if means[number] < SUNK_REFERENCE * statistics.median(around):
            sunk.add(number)
    return sunk


def paired_levels(kept: Sequence[SweepSample], reference: int) -> dict[int, float]:
    """Per visit of a paired sweep, the factor that puts its throughput on the reference's
    overall level: the reference's mean over the whole sweep divided by its level at the
    time of the visit — the mean of the reference visits right before and after it, or
    for the reference's own visits, of its visits in the same repeat.

    A reference visit that sank far under its pass (:func:`sunk_references`) stands
    nowhere: it gets no factor and no visit is read beside it (the nearest other one is).
    A visit gets no factor (its samples are not used) when no reference visit beside it
    was measured, or when the two beside it disagree far beyond the sweep's usual (the
    level moved during the visit, so which level it ran at is unknown) and its value
    keeps other visits."""
    by_visit, means = _visits(kept)
    sunk = sunk_references(by_visit, means, reference)
    own = [s for s in kept if s.value == reference and s.visit not in sunk]
    overall = statistics.fmean(s.throughput for s in own) if own else math.nan
    if not overall > 0:
        return {}
    # A reference visit that measured nothing (a stall) cannot stand beside another visit.
    anchors = sorted(
        n
        for n, group in by_visit.items()
        if group[0].value == reference and means[n] > 0 and n not in sunk
    )
    per_repeat: dict[int, list[float]] = {}
    for sample in own:
        per_repeat.setdefault(sample.repeat, []).append(sample.throughput)
    factors: dict[int, float] = {}
    split: dict[int, float] = {}
    for number, group in by_visit.items():
        if group[0].value == reference:
            if number in sunk:
                continue
            level = statistics.fmean(per_repeat[group[0].repeat])
            if level > 0:
                factors[number] = overall / level
            continue
        beside = [means[n] for n in [n for n in anchors if n < number][-1:]]
        beside += [means[n] for n in [n for n in anchors if n > number][:1]]
        if not beside:
            continue
        factors[number] = overall / statistics.fmean(beside)
        split[number] = abs(math.log(beside[0] / beside[-1]))
    if split:
        limit = max(SPLIT_FACTOR * statistics.median(split.values()), SPLIT_FLOOR)
        value_of = {n: group[0].value for n, group in by_visit.items()}
        for number in sorted(split, key=split.__getitem__, reverse=True):
            value = value_of[number]
            others = [n for n in factors if n != number and value_of[n] == value]
            if split[number] > limit and others:
                del factors[number]
    return factors
