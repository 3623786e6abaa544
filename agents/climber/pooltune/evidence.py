"""What the pooltune climber decides on: log throughput per tuple, its noise, the verdicts.

Levels are log throughput (differences are relative). Locations are Huber estimates, the
noise the median pairwise difference of the run's own samples (stalls and heavy tails do not
steer a decision), and a verdict must survive the removal of any single extreme sample.
Flagged stalls are set aside while a minority; only the last ``recent_window`` steps count;
visits are paired in time, and the pairs' own scatter widens the error where the host drifts
faster than a visit. Why the test is built this way: docs/climber.md ("Evidence").
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from agents.climber.pooltune.config import PooltuneConfig
from agents.climber.pooltune.stats import (
    HUBER_K,
    huber_location,
    mad_scale,
    median,
    neighbour_scale,
    standard_error,
    without_extreme,
)


class Verdict(enum.Enum):
    BETTER = 1
    EQUAL = 0
    WORSE = -1
    UNSURE = 2


class Comparison(NamedTuple):
    """A verdict, and whether the sample cap forced it (the test proved nothing)."""

    verdict: Verdict
    forced: bool = False


TupleKey = tuple[tuple[str, int], ...]


def tuple_key(knobs: Mapping[str, int]) -> TupleKey:
    return tuple(sorted(knobs.items()))


@dataclass(frozen=True, slots=True)
class Reading:
    step: int
    level: float
    #: The target flagged the sample as a stall.
    stalled: bool
    #: Consecutive samples at one tuple form a visit.
    visit: int


@dataclass(frozen=True, slots=True)
class Rules:
    """How a comparison judges a probe against its reference."""

    #: Ties keep the current value: an unproven gain must be twice ε.
    stay: bool = False
    #: A probe may lose up to this much and still tie (default ε).
    loss_tolerance: float | None = None
    #: An unproven tie is a tie only if the probe did not measure lower.
    prove_tie: bool = False
    #: A tie must keep its loss inside the tolerance by this many standard errors.
    shown_tie_z: float = 0.0
    #: The most samples the probe may take before a verdict is forced (None: max_samples).
    max_samples: int | None = None
    #: The most samples of one visit before the reference is measured again (None: the
    #: configured ``visit_samples``).
    visit_samples: int | None = None
    #: z of the test (None: the configured ``z``).
    z: float | None = None
    #: Only a gain matters: a probe whose first visit measured no higher than the
    #: reference stops there (an unproven tie), instead of being measured until it tells.
    gain_only: bool = False
    #: A gain counts only once the reference was measured after the probe (A/B/A): where
    #: the curve's shape allows only a small gain, a large one may be the server moving.
    witness_gain: bool = False


class Evidence:
    """The samples measured at each tuple of one climb, and the noise learnt over all climbs."""

    def __init__(self, config: PooltuneConfig) -> None:
        self.config = config
        #: The climber's step count: the recent window ends here.
        self.now = 0
        self._readings: dict[TupleKey, list[Reading]] = {}
        #: What the server showed beside throughput, per tuple: (step, value) of "cpu"
        #: (cores busy) and "locks" (row-lock waits per statement).
        self._signals: dict[str, dict[TupleKey, list[tuple[int, float]]]] = {}
        self._visit = 0
        self._last_key: TupleKey | None = None
        #: Noise learnt in earlier climbs: variance and its degrees of freedom.
        self._learnt_variance = 0.0
        self._learnt_dof = 0.0
        self._noise_cache: tuple[int, int, float] | None = None
        self._records = 0

    def forget(self) -> None:
        """Drop the measurements (a new climb); the noise learnt stays."""
        variance, dof = self._climb_noise()
        if dof > 0:
            total = self._learnt_dof + dof
            self._learnt_variance = (
                self._learnt_variance * self._learnt_dof + variance * dof
            ) / total
            self._learnt_dof = min(total, self.config.noise_memory)
        self._readings.clear()
        self._signals.clear()
        self._last_key = None
        self._noise_cache = None

    def record(
        self,
        knobs: Mapping[str, int],
        level: float,
        cpu_busy: float | None,
        stalled: bool | None = None,
        lock_waits: float | None = None,
        host_cpu_busy: float | None = None,
    ) -> None:
        key = tuple_key(knobs)
        if key != self._last_key:
            self._visit += 1
            self._last_key = key
        self._readings.setdefault(key, []).append(
            Reading(self.now, level, bool(stalled), self._visit)
        )
        self._records += 1
        signals = (("cpu", cpu_busy), ("locks", lock_waits), ("host_cpu", host_cpu_busy))
        for signal, value in signals:
            if value is not None and math.isfinite(value):
                per_tuple = self._signals.setdefault(signal, {})
                per_tuple.setdefault(key, []).append((self.now, value))

    # ----------------------------------------------------------------- samples
    def _window(self, knobs: Mapping[str, int], window: int) -> list[Reading]:
        horizon = self.now - window
        return [r for r in self._readings.get(tuple_key(knobs), []) if r.step > horizon]

    @staticmethod
    def _kept_readings(readings: list[Reading]) -> list[Reading]:
        """The readings, with flagged stalls set aside while they are a minority."""
        stalled = sum(r.stalled for r in readings)
        if 0 < stalled <= len(readings) - stalled:
            return [r for r in readings if not r.stalled]
        return readings

    @classmethod
    def _kept(cls, readings: list[Reading]) -> list[float]:
        """Levels, with flagged stalls set aside while they are a minority."""
        return [r.level for r in cls._kept_readings(readings)]

    def readings(self, knobs: Mapping[str, int], *, since: int | None = None) -> list[Reading]:
        """The readings at ``knobs`` inside the recent window (or after ``since``), stalls
        set aside: what a comparison pairs in time."""
        if since is None:
            return self._kept_readings(self._window(knobs, self.config.recent_window))
        found = [r for r in self._readings.get(tuple_key(knobs), []) if r.step > since]
        return self._kept_readings(found)

    def recent(self, knobs: Mapping[str, int]) -> list[float]:
        """The levels measured at ``knobs`` inside the recent window (stalls set aside)."""
        return self._kept(self._window(knobs, self.config.recent_window))

    def since(self, knobs: Mapping[str, int], step: int) -> list[float]:
        """The levels measured at ``knobs`` after ``step`` (stalls set aside)."""
        return self._kept([r for r in self._readings.get(tuple_key(knobs), []) if r.step > step])

    def last_seen(self, knobs: Mapping[str, int]) -> int | None:
        """The step of the latest sample at ``knobs`` (None: never measured this climb)."""
        readings = self._readings.get(tuple_key(knobs))
        return readings[-1].step if readings else None

    def visits(self, knobs: Mapping[str, int], window: int) -> list[list[float]]:
        """The levels at ``knobs`` inside ``window`` steps, one list per visit, oldest first."""
        grouped: dict[int, list[Reading]] = {}
        for reading in self._window(knobs, window):
            grouped.setdefault(reading.visit, []).append(reading)
        return [self._kept(grouped[visit]) for visit in sorted(grouped)]

    def signal(self, signal: str, knobs: Mapping[str, int]) -> float:
        """The mean of ``signal`` ("cpu": cores busy, "host_cpu": on the whole host, "locks":
        row-lock waits per statement) at ``knobs`` in the recent window (0 if unknown)."""
        horizon = self.now - self.config.recent_window
        seen = self._signals.get(signal, {}).get(tuple_key(knobs), [])
        values = [v for t, v in seen if t > horizon]
        return sum(values) / len(values) if values else 0.0

    def level(self, throughput: float, reference: list[float]) -> float | None:
        """Log throughput, floored at ``stall_level`` of the ``reference`` level, so a
        stall weighs heavily without swamping the noise; None for a stall with no reference."""
        if not reference:
            return math.log(throughput) if throughput > 0 else None
        floor = median(reference) + math.log(self.config.stall_level)
        return max(floor, math.log(throughput)) if throughput > 0 else floor

    # ----------------------------------------------------------------- noise
    def _climb_noise(self) -> tuple[float, float]:
        """The deviations of each tuple's samples from its median, capped at
        ``slow_noise_cap`` times the scale of neighbours inside a visit: a level that moved
        between visits (a workload change) must show as a change, not as noise."""
        groups: list[list[float]] = []
        visits: list[list[float]] = []
        for key in self._readings:
            readings = self._window(dict(key), self.config.noise_window)
            groups.append(self._kept(readings))
            by_visit: dict[int, list[Reading]] = {}
            for reading in readings:
                by_visit.setdefault(reading.visit, []).append(reading)
            visits.extend(self._kept(v) for v in by_visit.values())
        scale, dof = mad_scale(groups)
        fast = neighbour_scale(visits)
        if dof == 0:
            # Early in a climb no tuple has samples a visit apart yet: its neighbours are
            # what the run has to go by.
            return fast**2, float(sum(max(0, len(v) - 1) for v in visits))
        if fast > 0:
            scale = min(scale, self.config.slow_noise_cap * fast)
        return scale**2, dof

    def sample_noise(self) -> float:
        """Robust per-sample noise of a level: the run's own pairwise differences, pooled
        with the noise of earlier climbs and a prior (``prior_cv``, ``prior_weight``)."""
        if self._noise_cache is not None and self._noise_cache[:2] == (self.now, self._records):
            return self._noise_cache[2]
        cfg = self.config
        variance, dof = self._climb_noise()
        prior = math.log1p(cfg.prior_cv**2)
        pooled = (
            cfg.prior_weight * prior + self._learnt_dof * self._learnt_variance + dof * variance
        ) / (cfg.prior_weight + self._learnt_dof + dof)
        scale = math.sqrt(pooled)
        self._noise_cache = (self.now, self._records, scale)
        return scale

    def noise(self) -> float:
        """Noise of a level for tests: inflated for autocorrelated samples."""
        return self.sample_noise() * self.config.autocorrelation_inflation

    def location(self, values: list[float]) -> float:
        return huber_location(values, self.sample_noise())

    # ----------------------------------------------------------------- verdicts
    def compare(
        self,
        reference: Sequence[Reading] | Sequence[float],
        probe: Sequence[Reading] | Sequence[float],
        *,
        final: bool,
        rules: Rules = Rules(),
    ) -> Comparison:
        """BETTER / WORSE / EQUAL once the samples tell, even without any one extreme sample
        of either side; else UNSURE. At ``final`` a verdict is forced: an unproven gain is no
        gain (twice ε where ties ``stay``), and an unproven tie (``prove_tie``) is a tie
        only if the probe did not measure lower. Readings (not bare levels) are paired in
        time: each visit of the probe against the reference's visits around it."""
        if not reference or not probe:
            return Comparison(Verdict.UNSURE)
        reference, probe = as_readings(reference), as_readings(probe)
        verdict = self._verdict(reference, probe, rules)
        if verdict is not Verdict.UNSURE and self._survives(reference, probe, rules, verdict):
            return Comparison(verdict)
        if not final:
            return Comparison(Verdict.UNSURE)
        return Comparison(self._forced(reference, probe, rules), forced=True)

    def difference(
        self, reference: Mapping[str, int], probe: Mapping[str, int]
    ) -> tuple[float, float]:
        """The robust log difference of ``probe`` over ``reference`` and its standard
        error, from their recent samples."""
        return self.paired_difference(self.readings(reference), self.readings(probe))

    def gain_without_lowest(
        self, reference: Mapping[str, int], probe: Mapping[str, int]
    ) -> float | None:
        """The log gain of ``probe`` over ``reference`` with the probe's lowest sample set
        aside (one stall neither makes a loss nor hides a gain); None below two samples."""
        measured = self.recent(probe)
        base = self.recent(reference)
        if len(measured) < 2 or not base:
            return None
        trimmed = without_extreme(measured, highest=False)
        return self.location(trimmed) - self.location(base)

    def paired_difference(
        self, reference: Sequence[Reading], probe: Sequence[Reading]
    ) -> tuple[float, float]:
        """The log difference of ``probe`` over ``reference`` and its standard error.

        Each side's level is its Huber location over all its samples; each visit is then
        placed around it by its residuals, clipped like Huber's (so a stalled sample in a
        short visit moves the visit by a bounded amount), and each visit of the probe is
        set against the reference's visits right before and after it, interpolated in time
        (drift at a steady rate cancels). Without such neighbours, the whole locations."""
        reference_level = self.location([r.level for r in reference])
        probe_level = self.location([r.level for r in probe])
        limit = HUBER_K * self.sample_noise()

        def placed(visit: Sequence[Reading], anchor: float) -> float:
            residuals = [max(-limit, min(limit, r.level - anchor)) for r in visit]
            return anchor + sum(residuals) / len(residuals)

        reference_visits = _visits(reference)
        paired: list[tuple[float, int]] = []
        for visit in _visits(probe):
            before = [v for v in reference_visits if v[-1].step < visit[0].step]
            after = [v for v in reference_visits if v[0].step > visit[-1].step]
            if not before and not after:
                paired = []
                break
            if before and after:
                low, high = before[-1], after[0]
                weight = (_middle(visit) - _middle(low)) / (_middle(high) - _middle(low))
                base = (1.0 - weight) * placed(low, reference_level) + weight * placed(
                    high, reference_level
                )
            else:
                base = placed(before[-1] if before else after[0], reference_level)
            paired.append((placed(visit, probe_level) - base, len(visit)))
        if paired:
            difference = sum(d * n for d, n in paired) / sum(n for _, n in paired)
        else:
            difference = probe_level - reference_level
        stderr = self.noise() * math.sqrt(1.0 / len(reference) + 1.0 / len(probe))
        if len(paired) >= 3:  # the pairs' scatter: faster drift does not cancel by pairing
            stderr = max(stderr, standard_error([d for d, _ in paired]))
        return difference, stderr

    def gain_ruled_out(
        self, reference: Sequence[Reading], probe: Sequence[Reading], z: float
    ) -> bool:
        """Even the upper end of the gain's interval (``z`` standard errors) stays under ε:
        no number of further samples is likely to show a gain worth keeping (a futility stop
        for a re-test that can only keep or drop a change). Never on the probe's first visit:
        one bad visit must not end a re-test."""
        if len(_visits(probe)) < 2:
            return False
        difference, stderr = self.paired_difference(reference, probe)
        return difference + z * stderr < self.config.epsilon

    def _verdict(
        self, reference: Sequence[Reading], probe: Sequence[Reading], rules: Rules
    ) -> Verdict:
        cfg = self.config
        tolerance = cfg.epsilon if rules.loss_tolerance is None else rules.loss_tolerance
        difference, stderr = self.paired_difference(reference, probe)
        shown = difference - rules.shown_tie_z * stderr
        z = cfg.z if rules.z is None else rules.z
        if difference > cfg.epsilon and difference > z * stderr:
            return Verdict.BETTER
        if difference < -tolerance and difference < -z * stderr:
            return Verdict.WORSE
        if -tolerance <= shown and difference <= cfg.epsilon and z * stderr <= 3 * cfg.epsilon:
            return Verdict.EQUAL
        return Verdict.UNSURE

    def _survives(
        self,
        reference: Sequence[Reading],
        probe: Sequence[Reading],
        rules: Rules,
        verdict: Verdict,
    ) -> bool:
        """The verdict holds without the most extreme sample of either side."""
        for trimmed_reference, trimmed_probe in (
            (reference, _without(probe, highest=True)),
            (reference, _without(probe, highest=False)),
            (_without(reference, highest=True), probe),
            (_without(reference, highest=False), probe),
        ):
            if not trimmed_reference or not trimmed_probe:
                return False
            if self._verdict(trimmed_reference, trimmed_probe, rules) is not verdict:
                return False
        return True

    def _forced(
        self, reference: Sequence[Reading], probe: Sequence[Reading], rules: Rules
    ) -> Verdict:
        cfg = self.config
        tolerance = cfg.epsilon if rules.loss_tolerance is None else rules.loss_tolerance
        difference, stderr = self.paired_difference(reference, probe)
        shown = difference - rules.shown_tie_z * stderr
        if difference > (2 * cfg.epsilon if rules.stay else cfg.epsilon):
            return Verdict.BETTER
        if shown < -tolerance or (rules.prove_tie and difference < 0):
            return Verdict.WORSE
        return Verdict.EQUAL

    def stalls_seen(self) -> bool:
        """Some recent sample fell far (four robust standard deviations) below its tuple's
        level: the server stalls now and then, and two low samples in a row may be two
        stalls rather than a collapse."""
        horizon = self.now - self.config.recent_window
        for key, readings in self._readings.items():
            if any(r.stalled and r.step > horizon for r in readings):
                return True
            levels = self._kept(self._window(dict(key), self.config.recent_window))
            if len(levels) >= 3 and self._floor(levels) > min(levels):
                return True
        return False

    def _floor(self, levels: list[float]) -> float:
        """The lowest of ``levels`` that is not a stall (four robust standard deviations
        below their location): one stall of the best must not hide a probe's collapse."""
        low = self.location(levels) - 4.0 * self.sample_noise()
        return min((x for x in levels if x >= low), default=min(levels))

    def _unflagged(self, knobs: Mapping[str, int]) -> list[float]:
        """The recent levels at ``knobs`` the target did not flag: a stall it saw is never
        taken for a collapse of the tuple."""
        return [r.level for r in self._window(knobs, self.config.recent_window) if not r.stalled]

    def sharp_drop(self, probe: Mapping[str, int], best: Mapping[str, int]) -> bool:
        """The last two samples at ``probe`` fell ``rollback_drop`` (or, on a noisier
        server, two standard deviations) below ``best``'s level and below every recent
        sample of ``best`` but its stalls (:meth:`_floor`; as low as the best's spread is
        noise, not a collapse)."""
        if probe == best:
            return False
        measured = self._unflagged(probe)
        reference = self.recent(best)
        if len(measured) < 2 or not reference:
            return False
        drop = max(-math.log1p(-self.config.rollback_drop), 2.0 * self.noise())
        threshold = min(self.location(reference) - drop, self._floor(reference))
        return measured[-1] < threshold and measured[-2] < threshold

    def collapsed(
        self,
        lag_level: float | None,
        probe: Mapping[str, int],
        best: Mapping[str, int],
        *,
        again: bool = False,
    ) -> bool:
        """The first sample at ``probe`` lost more than ``max_probe_loss`` against the best
        (and fell below every recent sample of it but its stalls), and the blended sample
        before it (old and new tuple, half each) agrees: leave at once. A probe that
        collapsed once already (``again``) is left on the first sample of its new visit
        alone: the first collapse is the second witness."""
        reference = self.recent(best)
        if probe == best or not reference:
            return False
        if again:
            window = _visits(self._window(probe, self.config.recent_window))
            visit = window[-1] if window else []
            if len(visit) != 1 or visit[0].stalled:
                return False
            first = visit[0].level
        else:
            measured = self._unflagged(probe)
            if lag_level is None or len(measured) != 1 or len(self.recent(probe)) != 1:
                return False
            first = measured[0]
        level = self.location(reference)
        kept = 1.0 - self.config.max_probe_loss
        limit = min(level + math.log(kept), self._floor(reference))
        if first >= limit:
            return False
        return again or (lag_level is not None and lag_level < level + math.log((1.0 + kept) / 2.0))


def as_readings(values: Sequence[Reading] | Sequence[float]) -> list[Reading]:
    """Bare levels as readings of one moment (nothing to pair in time)."""
    return [v if isinstance(v, Reading) else Reading(0, float(v), False, 0) for v in values]


def _visits(readings: Sequence[Reading]) -> list[list[Reading]]:
    """The readings grouped by visit, in time order."""
    grouped: dict[int, list[Reading]] = {}
    for reading in readings:
        grouped.setdefault(reading.visit, []).append(reading)
    return sorted(grouped.values(), key=lambda visit: visit[0].step)


def _without(readings: Sequence[Reading], *, highest: bool) -> list[Reading]:
    """``readings`` less the one with the highest (or lowest) level."""
    if not readings:
        return []
    pick = max if highest else min
    extreme = pick(range(len(readings)), key=lambda i: readings[i].level)
    return [r for i, r in enumerate(readings) if i != extreme]


def _middle(visit: Sequence[Reading]) -> float:
    """The mean step of a visit."""
    return sum(r.step for r in visit) / len(visit)
