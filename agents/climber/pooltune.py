"""pooltune's default climber: noise-aware line searches in log space, then hold and watch.

Why this shape (what the anchors teach, DESIGN.md):
- The first sample after a change mixes old and new (actuation lag): it is discarded.
- Thread-pool curves are flat at the top and steep on the flanks, so the search works in
  log2(size) with steps that grow while throughput keeps improving (fast on flanks) and
  halve once the optimum is bracketed; it stops at ``min_step`` instead of chasing the
  last percent.
- A probe is compared with the best point measured so far (its recent samples only, so
  slow drift does not bias the comparison) by a test that must clear both the noise (a
  z-test on log throughput with a pooled, autocorrelation-inflated noise estimate) and a
  relevance threshold ``epsilon``. Ambiguous probes get more samples, up to a cap.
- Ties go to the smaller pool (thread economy): the result is the smallest size within
  ``epsilon`` of the best. For the other knobs ties keep the current value.
- Safety: a probe whose first samples fall sharply below the best is abandoned at once and
  the climber rolls back to the best tuple (``ROLLBACK`` event).
- A start tuple and plausible range from the service size the first steps.
- After the size, the other tuned knobs are searched one at a time (oversubscribe, stall
  limit), then the size is checked again with small steps.
- Holding the optimum, a robust two-sided CUSUM on log throughput against a slowly
  adapting baseline (so drift of ±20% over tens of minutes is followed, not mistaken for
  a change) and a check on the connection count detect a workload change; the climber
  then searches again from where it is.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Generator, Mapping
from dataclasses import dataclass

from agents.climber.base import Climber, EventKind, KnobDim, KnobSpace, Sample


@dataclass(frozen=True, slots=True)
class PooltuneConfig:
    """Parameters of :class:`PooltuneClimber` (defaults tuned on ``benchmarks.climb``)."""

    #: Samples discarded after each knob change (MariaDB: one 2-s sample is enough).
    lag_samples: int = 1
    #: Samples per probe before the first test, and the most a probe may take.
    min_samples: int = 2
    max_samples: int = 6
    #: z of the noise test and relevance threshold (relative throughput, log scale).
    z: float = 2.0
    epsilon: float = 0.03
    #: Ties when walking a plateau down (once a large step changed nothing): a smaller
    #: pool may lose up to this much.
    economy_epsilon: float = 0.045
    #: From a start the service recommended (a model that already aims at the smallest
    #: size near the best), a smaller pool ties the best only if its loss stays inside the
    #: tolerance by this many standard errors (one-sided): the step down must be shown,
    #: not merely be inside the noise. 0 treats warm starts like cold ones.
    warm_tie_z: float = 1.5
    #: Prior for the per-sample noise (coefficient of variation) and its weight in samples.
    prior_cv: float = 0.05
    prior_weight: float = 4.0
    #: Inflation of standard errors for autocorrelated samples.
    autocorrelation_inflation: float = 1.3
    #: Steps in log2 units: first step on a cold start, cap, stop, growth per success.
    initial_step: float = 0.5
    max_step: float = 2.0
    min_step: float = 0.15
    expand: float = 2.0
    #: With a plausible range from the service, the first step is its width (log2)
    #: divided by this.
    range_steps: float = 6.0
    #: An equal probe above the candidate closes the search upwards only if it was at
    #: most this far (log2); farther, the peak may lie between the two.
    equal_bracket_step: float = 0.5
    #: Only samples this recent count for comparisons (drift).
    recent_window: int = 30
    #: Roll back when a probe's first samples are this far (relative) below the best.
    rollback_drop: float = 0.15
    #: Hold: CUSUM slack and threshold (in noise units), winsorising clip, baseline EWMA,
    #: and the smallest relative change worth detecting.
    cusum_slack: float = 1.0
    cusum_threshold: float = 10.0
    cusum_clip: float = 3.0
    baseline_alpha: float = 0.05
    #: Hold: EWMA weight of the noise learned around the held level.
    hold_noise_alpha: float = 0.02
    min_change: float = 0.2
    #: Hold: a change of the connection count by this factor for 2 samples is a change.
    connections_change: float = 1.3
    #: Search the other knobs after the size, with this first step (log2: ×4).
    tune_secondary: bool = True
    secondary_step: float = 2.0
    #: Throughput below which the climber waits instead of climbing (per second), once
    #: ``suspend_after`` samples in a row fell there with connections open.
    min_throughput: float = 0.0
    suspend_after: int = 3
    #: A sample with connections but (almost) no throughput is a stall (an IO-bound server
    #: whose pool is too small stalls for seconds): it counts against the tuple in force,
    #: at this share of the best tuple's level (log throughput is floored there, so one
    #: stall weighs heavily but does not swamp the noise estimate).
    stall_level: float = 0.1
    #: A group runs about one thread at a time, so a pool of ``n`` groups below the core
    #: count can keep about ``n`` cores busy: when the server uses more than this many
    #: times ``n`` cores at the best tuple, size ``n`` would cap its CPU and is not probed
    #: (each such probe costs a throughput dip). 0 disables; needs the server's CPU time
    #: in the samples.
    cpu_cap_margin: float = 1.1

    def __post_init__(self) -> None:
        problems = []
        non_negative = (
            "lag_samples z epsilon economy_epsilon warm_tie_z prior_weight cusum_slack "
            "cusum_clip min_throughput cpu_cap_margin"
        )
        problems += [
            f"{name} must be ≥ 0" for name in non_negative.split() if getattr(self, name) < 0
        ]
        positive = "min_samples prior_cv cusum_threshold min_change suspend_after recent_window"
        problems += [f"{name} must be > 0" for name in positive.split() if getattr(self, name) <= 0]
        fractions = "rollback_drop stall_level baseline_alpha hold_noise_alpha"
        problems += [
            f"{name} must be between 0 and 1 (exclusive)"
            for name in fractions.split()
            if not 0 < getattr(self, name) < 1
        ]
        if self.max_samples < self.min_samples:
            problems.append("max_samples must be ≥ min_samples")
        if not 0 < self.min_step <= self.initial_step <= self.max_step:
            problems.append("steps must satisfy 0 < min_step ≤ initial_step ≤ max_step")
        if self.expand <= 1 or self.autocorrelation_inflation < 1:
            problems.append("expand must be > 1 and autocorrelation_inflation ≥ 1")
        if self.range_steps <= 0 or self.equal_bracket_step <= 0 or self.secondary_step <= 0:
            problems.append("range_steps, equal_bracket_step and secondary_step must be > 0")
        if self.connections_change <= 1:
            problems.append("connections_change must be > 1")
        if problems:
            raise ValueError("; ".join(problems))


class PooltuneState(enum.StrEnum):
    SEARCH_SIZE = "search-size"
    SEARCH_TUPLE = "search-tuple"
    HOLD = "hold"
    SUSPENDED = "suspended"


class _Verdict(enum.Enum):
    BETTER = 1
    EQUAL = 0
    WORSE = -1
    UNSURE = 2


_Request = tuple[dict[str, int], int]
_Program = Generator[_Request, None, None]


def _key(knobs: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(knobs.items()))


class PooltuneClimber(Climber):
    name = "pooltune"

    def __init__(
        self, space: KnobSpace, cpu_count: int, config: PooltuneConfig | None = None
    ) -> None:
        super().__init__(space, cpu_count)
        self.config = config or PooltuneConfig()
        self._state = PooltuneState.SEARCH_SIZE
        self._converged = False
        self._archive: dict[tuple[tuple[str, int], ...], list[tuple[int, float]]] = {}
        #: The last EQUAL verdict was forced by the sample cap, not shown by the test.
        self._forced_tie = False
        #: CPU cores the server used, per tuple (same layout as the archive).
        self._cpu_busy: dict[tuple[tuple[str, int], ...], list[tuple[int, float]]] = {}
        self._noise_ss = 0.0
        self._noise_dof = 0.0
        self._range: dict[str, tuple[int, int]] = {}
        self._program: _Program | None = None
        self._lag_left = 0
        self._pending = 0
        self._aborted = False
        self._top: dict[str, int] = dict(self._current)
        self._connections_ref: float | None = None
        self._connections_strikes = 0
        self._baseline: float | None = None
        #: Variance of log throughput around the held level (winsorised EWMA).
        self._hold_variance: float | None = None
        self._cusum_high = 0.0
        self._cusum_low = 0.0
        self._suspended_from: PooltuneState | None = None
        #: Samples in a row with connections but throughput at or below min_throughput.
        self._low_streak = 0
        self._flat_votes = 0
        #: The climb started from a recommended tuple (not from the tuple in force).
        self._warm = False

    # ----------------------------------------------------------------- interface
    @property
    def state(self) -> str:
        return self._state.value

    @property
    def converged(self) -> bool:
        return self._converged

    def reset(
        self,
        start: Mapping[str, int],
        *,
        plausible_range: Mapping[str, tuple[int, int]] | None = None,
    ) -> None:
        self._current = self.space.clip(start)
        self._best = dict(self._current)
        self._range = dict(plausible_range or {})
        self._lag_left = self.config.lag_samples
        self._start_program(cold=not self._range)

    def step(self, sample: Sample) -> dict[str, int]:
        self.steps += 1
        in_force = {n: sample.knobs.get(n, v) for n, v in self._current.items()}
        if in_force != self._current:
            self._current = self.space.clip(in_force)
            self._event(EventKind.MANUAL_CHANGE, f"knobs changed outside the climber: {in_force}")
            self._range = {}
            self._lag_left = 0
            self._start_program(cold=True)
            return dict(self._current)
        low = sample.throughput <= self.config.min_throughput
        self._low_streak = self._low_streak + 1 if low else 0
        if sample.connections <= 0 or (
            low
            and (
                self._low_streak >= self.config.suspend_after
                or self._state is PooltuneState.SUSPENDED
            )
        ):
            if self._state is not PooltuneState.SUSPENDED:
                self._suspended_from = self._state
                self._state = PooltuneState.SUSPENDED
                self._event(EventKind.SUSPENDED, "no connections or throughput too low")
            return dict(self._current)
        if self._state is PooltuneState.SUSPENDED:
            self._event(EventKind.RESUMED, "load is back")
            self._state = self._suspended_from or PooltuneState.SEARCH_SIZE
            self._cusum_high = self._cusum_low = 0.0
            self._lag_left = 1
        if self._lag_left > 0:
            self._lag_left -= 1
            return dict(self._current)
        level = self._level(sample.throughput)
        if level is None:
            return dict(self._current)  # a stall with nothing measured yet to weigh it by
        self._archive.setdefault(_key(self._current), []).append((self.steps, level))
        if sample.cpu_busy is not None and math.isfinite(sample.cpu_busy):
            self._cpu_busy.setdefault(_key(self._current), []).append((self.steps, sample.cpu_busy))
        if self._state is PooltuneState.HOLD:
            self._hold(level, sample.connections)
            return dict(self._current)
        if self._connections_ref is None:
            self._connections_ref = float(sample.connections)
        self._pending -= 1
        if self._is_sharp_drop():
            self._pending = 0
            self._aborted = True
            self._event(EventKind.ROLLBACK, "sharp drop at a probe: back to the best tuple")
        if self._pending <= 0:
            self._advance()
        return dict(self._current)

    # ----------------------------------------------------------------- program
    def _start_program(self, *, cold: bool) -> None:
        self._warm = not cold
        self._archive.clear()
        self._cpu_busy.clear()
        self._top = dict(self._current)
        self._converged = False
        self._state = PooltuneState.SEARCH_SIZE
        self._baseline = None
        self._connections_ref = None
        self._program = self._climb(cold=cold)
        self._pending = 0
        self._aborted = False
        if self._lag_left == 0:
            self._advance()

    def _advance(self) -> None:
        assert self._program is not None
        try:
            target, count = next(self._program)
        except StopIteration:
            self._enter_hold()
            return
        target = self.space.clip(target)
        if target != self._current:
            self._current = target
            self._lag_left = self.config.lag_samples
        self._pending = count

    def _initial_step(self, dim: KnobDim, value: int, *, cold: bool) -> float:
        cfg = self.config
        if dim is self.space.size and cold and value >= 8 * self.cpu_count:
            # Far above the cores: the flat tail of a falling curve looks like a plateau
            # at small steps, so the first steps are large.
            return max(cfg.initial_step, 1.5)
        if not cold and dim.name in self._range:
            low, high = self._range[dim.name]
            span = dim.to_unit(max(high, 1)) - dim.to_unit(max(low, 1))
            return min(cfg.max_step, max(cfg.min_step, span / cfg.range_steps))
        return cfg.initial_step if dim is self.space.size else cfg.secondary_step

    def _climb(self, *, cold: bool) -> _Program:
        size = self.space.size
        start_size = self._current[size.name]
        yield from self._search(size, self._initial_step(size, start_size, cold=cold), True)
        if not self.config.tune_secondary or len(self.space.dims) == 1:
            return
        self._state = PooltuneState.SEARCH_TUPLE
        moved = False
        for dim in self.space.dims[1:]:
            before = self._current[dim.name]
            step = self._initial_step(dim, before, cold=cold)
            yield from self._search(dim, step, False)
            moved = moved or self._top[dim.name] != before
        if moved:
            self._state = PooltuneState.SEARCH_SIZE
            yield from self._search(size, 2 * self.config.min_step, True)

    def _search(self, dim: KnobDim, step: float, economy: bool) -> _Program:
        """Line search on one knob from the best tuple; leaves ``self._top`` at the
        chosen tuple (the smallest within ε of the best when ``economy``).

        ``low_bound`` / ``high_bound`` (log2 coordinates) are the nearest probed points
        known not to beat the candidate; refinement only probes inside them.
        """
        cfg = self.config
        yield from self._ensure_reference()
        high_cap = dim.high
        if dim is self.space.size and self._connections_ref:
            high_cap = max(dim.low, min(dim.high, max(self.cpu_count, int(self._connections_ref))))
            if self._top[dim.name] > high_cap:
                # More groups than connections (and cores) cannot help: cut at once.
                self._top = {**self._top, dim.name: high_cap}
                self._event(EventKind.GUARD, f"{dim.name} cut to {high_cap}: connections")
                yield (dict(self._top), cfg.min_samples)
        center = dict(self._top)
        low_bound, high_bound = -math.inf, math.inf
        # Plateau evidence enables economy_epsilon: two large steps that changed nothing
        # (one alone may straddle a peak).
        self._flat_votes = 0

        def neighbour(base: Mapping[str, int], direction: int, h: float) -> dict[str, int]:
            value = dim.from_unit(dim.to_unit(base[dim.name]) + direction * h)
            if value == base[dim.name]:
                value = base[dim.name] + direction
            moved = dict(base)
            moved[dim.name] = min(high_cap, max(dim.low, value))
            return moved

        def coordinate(knobs: Mapping[str, int]) -> float:
            return dim.to_unit(knobs[dim.name])

        def upper_bound(
            verdict: _Verdict, probe: Mapping[str, int], center: Mapping[str, int], h: float
        ) -> float:
            # Equal a small step above: no gain upwards. Worse, or equal a large step
            # above (the two sides of a peak), the peak may lie between.
            if verdict is _Verdict.EQUAL and h >= cfg.equal_bracket_step:
                self._flat_votes += 1
            if verdict is _Verdict.EQUAL and h <= cfg.equal_bracket_step:
                return coordinate(center)
            return coordinate(probe)

        # Which side first: over-provisioned pools are checked downwards first.
        first = -1 if (dim is self.space.size and center[dim.name] > 2 * self.cpu_count) else 1
        direction = 0
        for candidate_direction in (first, -first):
            h = step
            while True:
                probe = neighbour(center, candidate_direction, h)
                if probe == center:
                    break
                verdict = yield from self._probe(probe, stay=not economy)
                # A tie the noise forced (no proof either way) one small step up says little
                # on a noisy server: look a larger step farther before closing that side.
                if (
                    verdict is _Verdict.EQUAL
                    and self._forced_tie
                    and economy
                    and candidate_direction > 0
                    and h < cfg.equal_bracket_step * cfg.expand
                ):
                    h *= cfg.expand
                    continue
                break
            if probe == center:
                continue
            if verdict is _Verdict.BETTER:
                self._top = center = probe
                direction = candidate_direction
                break
            if verdict is _Verdict.EQUAL and economy and candidate_direction < 0:
                self._flat_votes += int(h >= cfg.equal_bracket_step)
                high_bound = coordinate(center)
                center = probe
                direction = -1
                break
            if candidate_direction > 0:
                high_bound = upper_bound(verdict, probe, center, h)
            else:
                low_bound = coordinate(probe)
        h = step
        if direction == 0 and not economy:
            h = 0.0  # ties keep the current value: nothing to refine
        if direction != 0:
            # Expand along the improving direction (or walk down a plateau).
            while True:
                h = min(h * cfg.expand, cfg.max_step) if center == self._top else h
                probe = neighbour(center, direction, h)
                if probe == center:
                    break
                previous = coordinate(center)
                verdict = yield from self._probe(probe, stay=not economy)
                if verdict is _Verdict.BETTER:
                    self._top = center = probe
                    if direction > 0:
                        low_bound = previous
                    else:
                        high_bound = previous
                elif verdict is _Verdict.EQUAL and economy and direction < 0:
                    self._flat_votes += int(h >= cfg.equal_bracket_step)
                    high_bound = previous
                    center = probe
                else:
                    if direction > 0:
                        high_bound = upper_bound(verdict, probe, center, h)
                    else:
                        low_bound = coordinate(probe)
                    break
        # Refine inside the bracket with halving steps, smaller side first.
        h /= 2.0
        margin = cfg.min_step / 2.0
        while h >= cfg.min_step:
            for side in (-1, 1):
                target = coordinate(center) + side * h
                if (side < 0 and target <= low_bound + margin) or (
                    side > 0 and target >= high_bound - margin
                ):
                    continue
                probe = neighbour(center, side, h)
                # Integer sizes: a half step may round onto a point already bracketed out.
                if (
                    probe == center
                    or coordinate(probe) <= low_bound + 1e-9
                    or coordinate(probe) >= high_bound - 1e-9
                ):
                    continue
                previous = coordinate(center)
                verdict = yield from self._probe(probe, stay=not economy)
                if verdict is _Verdict.BETTER:
                    self._top = center = probe
                    if side > 0:
                        low_bound = previous
                    else:
                        high_bound = previous
                    break
                if verdict is _Verdict.EQUAL and economy and side < 0:
                    high_bound = previous
                    center = probe
                    break
                if side > 0:
                    high_bound = upper_bound(verdict, probe, center, h)
                else:
                    low_bound = coordinate(probe)
            h /= 2.0
        self._top = center
        if self._current != center:
            yield (center, cfg.min_samples)

    def _ensure_reference(self) -> _Program:
        if len(self._recent(self._top)) < self.config.min_samples:
            yield (dict(self._top), self.config.min_samples)

    def _probe(
        self, probe: dict[str, int], *, stay: bool = False
    ) -> Generator[_Request, None, _Verdict]:
        cfg = self.config
        yield from self._ensure_reference()
        if self._cpu_bound_below_cores(probe):
            return _Verdict.WORSE
        reference_before = self._recent(self._top)
        yield (probe, cfg.min_samples)
        while True:
            if self._aborted:
                self._aborted = False
                yield (dict(self._top), cfg.min_samples)
                return _Verdict.WORSE
            reference = self._recent(self._top) or reference_before
            samples = self._recent(probe)
            probe_size = probe.get(self.space.size.name, 0)
            smaller = probe_size < self._top.get(self.space.size.name, 0)
            verdict = self._compare(
                reference,
                samples,
                final=len(samples) >= cfg.max_samples,
                stay=stay,
                loss_tolerance=(
                    cfg.economy_epsilon if smaller and not stay and self._flat_votes >= 2 else None
                ),
                # Fewer groups than cores leave cores idle on a busy server: a tie down there
                # must be seen, not merely "not disproved" by noisy samples.
                prove_tie=smaller and not stay and probe_size < self.cpu_count,
                shown_tie_z=cfg.warm_tie_z if smaller and not stay and self._warm else 0.0,
            )
            if verdict is not _Verdict.UNSURE:
                return verdict
            yield (probe, 1)

    def _cpu_bound_below_cores(self, probe: Mapping[str, int]) -> bool:
        """The probe has fewer groups than cores, and fewer than the cores the server uses
        at the best tuple (with ``cpu_cap_margin``): it would cap the server's CPU and can
        only lose (GUARD event, not probed)."""
        size = self.space.size.name
        margin = self.config.cpu_cap_margin
        probe_size = probe.get(size, 0)
        if margin <= 0 or probe_size >= min(self.cpu_count, self._top.get(size, 0)):
            return False
        horizon = self.steps - self.config.recent_window
        busy = [v for t, v in self._cpu_busy.get(_key(self._top), []) if t > horizon]
        used = sum(busy) / len(busy) if busy else 0.0
        if used < margin * probe_size:
            return False
        self._event(
            EventKind.GUARD,
            f"{size}={probe_size} not probed: the server uses {used:.1f} of "
            f"{self.cpu_count} cores at {self._top[size]}, more than {probe_size} groups can run",
        )
        return True

    # ----------------------------------------------------------------- statistics
    def _level(self, throughput: float) -> float | None:
        """Log throughput, floored at ``stall_level`` of the best tuple's recent level;
        None for a stall before anything was measured."""
        reference = self._recent(self._top) or (
            [self._baseline] if self._baseline is not None else []
        )
        if not reference:
            return math.log(throughput) if throughput > 0 else None
        floor = sum(reference) / len(reference) + math.log(self.config.stall_level)
        return max(floor, math.log(throughput)) if throughput > 0 else floor

    def _recent(self, knobs: Mapping[str, int]) -> list[float]:
        horizon = self.steps - self.config.recent_window
        return [v for t, v in self._archive.get(_key(knobs), []) if t > horizon]

    def _noise(self) -> float:
        cfg = self.config
        prior = math.log1p(cfg.prior_cv**2)
        variance = (cfg.prior_weight * prior + self._noise_ss) / (
            cfg.prior_weight + self._noise_dof
        )
        return math.sqrt(variance)

    def _learn_noise(self, values: list[float]) -> None:
        if len(values) < 2:
            return
        mean = sum(values) / len(values)
        self._noise_ss += sum((v - mean) ** 2 for v in values)
        self._noise_dof += len(values) - 1

    def _compare(
        self,
        reference: list[float],
        probe: list[float],
        *,
        final: bool,
        stay: bool = False,
        loss_tolerance: float | None = None,
        prove_tie: bool = False,
        shown_tie_z: float = 0.0,
    ) -> _Verdict:
        """BETTER / WORSE / EQUAL once the samples tell, else UNSURE; at ``final`` a verdict
        is forced: an unproven gain is no gain, and an unproven tie (``prove_tie``: the probe
        is smaller, below the core count) is a tie only if the probe did not measure lower."""
        cfg = self.config
        if not reference or not probe:
            return _Verdict.UNSURE
        tolerance = cfg.epsilon if loss_tolerance is None else loss_tolerance
        difference = sum(probe) / len(probe) - sum(reference) / len(reference)
        noise = self._noise() * cfg.autocorrelation_inflation
        stderr = noise * math.sqrt(1.0 / len(reference) + 1.0 / len(probe))
        # The loss a tie must stay inside the tolerance with (the difference itself, or a
        # margin below it where the tie must be shown).
        shown = difference - shown_tie_z * stderr
        if difference > cfg.epsilon and difference > cfg.z * stderr:
            verdict = _Verdict.BETTER
        elif difference < -tolerance and difference < -cfg.z * stderr:
            verdict = _Verdict.WORSE
        elif (
            -tolerance <= shown and difference <= cfg.epsilon and cfg.z * stderr <= 3 * cfg.epsilon
        ):
            verdict = _Verdict.EQUAL
            self._forced_tie = False
        elif final:
            self._forced_tie = True
            # Where ties keep the current value, an unproven gain must be twice as large.
            if difference > (2 * cfg.epsilon if stay else cfg.epsilon):
                verdict = _Verdict.BETTER
            elif shown < -tolerance or (prove_tie and difference < 0):
                verdict = _Verdict.WORSE
            else:
                verdict = _Verdict.EQUAL
        else:
            return _Verdict.UNSURE
        self._learn_noise(probe)
        return verdict

    def _is_sharp_drop(self) -> bool:
        """Two samples of the current probe far below the best tuple's level."""
        if self._current == self._top:
            return False
        probe = self._recent(self._current)
        reference = self._recent(self._top)
        if len(probe) < 2 or not reference:
            return False
        threshold = sum(reference) / len(reference) + math.log1p(-self.config.rollback_drop)
        return probe[-1] < threshold and probe[-2] < threshold

    # ----------------------------------------------------------------- hold
    def _enter_hold(self) -> None:
        self._state = PooltuneState.HOLD
        self._program = None
        self._best = dict(self._current)
        recent = self._recent(self._current)
        self._baseline = sum(recent) / len(recent) if recent else None
        self._cusum_high = self._cusum_low = 0.0
        self._hold_variance = None
        self._connections_strikes = 0
        if not self._converged:
            self._converged = True
            self._event(EventKind.CONVERGED, f"holding {self._current}")

    def _hold(self, level: float, connections: int) -> None:
        cfg = self.config
        if self._baseline is None:
            self._baseline = level
            self._connections_ref = float(connections)
            return
        if self._connections_ref is None:
            self._connections_ref = float(connections)
        ratio = max(connections, 1) / max(self._connections_ref, 1.0)
        if ratio > cfg.connections_change or ratio < 1 / cfg.connections_change:
            self._connections_strikes += 1
        else:
            self._connections_strikes = 0
        noise = max(
            self._noise() * cfg.autocorrelation_inflation,
            math.log1p(cfg.min_change) / cfg.cusum_clip,
        )
        if self._hold_variance is None:
            self._hold_variance = noise**2
        # The noise seen while holding: probes are short, and a real server also wanders
        # over tens of seconds, which the short probes never see.
        noise = max(noise, math.sqrt(self._hold_variance))
        residual = max(-cfg.cusum_clip, min(cfg.cusum_clip, (level - self._baseline) / noise))
        self._hold_variance += cfg.hold_noise_alpha * (
            (residual * noise) ** 2 - self._hold_variance
        )
        self._cusum_high = max(0.0, self._cusum_high + residual - cfg.cusum_slack)
        self._cusum_low = max(0.0, self._cusum_low - residual - cfg.cusum_slack)
        # Follow slow drift; a clipped residual keeps spikes from dragging the baseline.
        self._baseline += cfg.baseline_alpha * residual * noise
        if self._connections_strikes >= 2:
            reason = f"connections moved from {self._connections_ref:.0f} to {connections}"
        elif max(self._cusum_high, self._cusum_low) > cfg.cusum_threshold:
            direction = "rose" if self._cusum_high > self._cusum_low else "fell"
            reason = f"throughput {direction} away from the held level"
        else:
            return
        self._event(EventKind.WORKLOAD_CHANGE, reason)
        self._start_program(cold=True)
