"""The pooltune climber's line search on one knob, in log2 coordinates: locate the best value.

Three phases: find a side that improves, expand along it, then refine inside the bracket
with halving steps. Ties keep the current value: the pool size's thread economy (the
smallest size within the tolerance of the best) is a separate walk, :mod:`economy`. The
bracket (``low_bound``, ``high_bound``) holds the nearest probed coordinates known not to
beat the center. Steps grow only while the gain per step does not fade (a fading gain
means the top is near, and a large step would overshoot it), and never beyond what the
prober allows (a probe's worst case must stay bounded). Why this shape:
docs/climber.md ("Search").
"""

from __future__ import annotations

import math
from collections.abc import Generator, Mapping
from dataclasses import replace
from typing import Protocol

from agents.climber.base import KnobDim
from agents.climber.pooltune.config import PooltuneConfig
from agents.climber.pooltune.evidence import Comparison, Rules, Verdict

#: A tuple to apply and how many samples to measure there.
Request = tuple[dict[str, int], int]
Program = Generator[Request, None, None]


class Prober(Protocol):
    """What a line search needs from the climb it is part of."""

    #: The best tuple measured so far; the line search moves it.
    top: dict[str, int]
    #: Tuples whose probe was rolled back in this climb (a collapse or a sharp drop).
    rolled_back: list[dict[str, int]]

    def probe(
        self, knobs: dict[str, int], *, rules: Rules, reference: dict[str, int] | None = None
    ) -> Generator[Request, None, Comparison]: ...

    def max_step(self, dim: KnobDim, side: int) -> float:
        """The largest step (log2) a probe may take from ``top`` towards ``side``."""
        ...

    def lowest_below(self, dim: KnobDim, base: Mapping[str, int]) -> int:
        """The smallest value of ``dim`` a probe below ``base`` may take (its worst case
        keeps the loss bound)."""
        ...

    def confirm(
        self, dim: KnobDim, before: dict[str, int], after: dict[str, int]
    ) -> Generator[Request, None, bool]:
        """Re-test ``after`` against ``before`` on fresh samples (A/B/A)."""
        ...

    def retest(
        self, before: dict[str, int], after: dict[str, int], *, rules: Rules
    ) -> Generator[Request, None, Comparison]:
        """``after`` against ``before`` on fresh samples only (A/B/A/B)."""
        ...

    def gain(self, knobs: Mapping[str, int], reference: Mapping[str, int]) -> float:
        """The measured log gain of ``knobs`` over ``reference``."""
        ...

    def paired_gain(
        self, knobs: Mapping[str, int], reference: Mapping[str, int]
    ) -> tuple[float, float] | None:
        """The log gain of ``knobs`` over ``reference`` paired in time, and its standard
        error; None while either lacks recent samples."""
        ...

    def loss_shown(self, knobs: Mapping[str, int], reference: Mapping[str, int]) -> float:
        """The log loss of ``knobs`` under ``reference`` that holds without ``knobs``'
        lowest sample (one stall does not make a loss); 0 where there is none."""
        ...

    def cores_idle(self, knobs: Mapping[str, int]) -> bool:
        """The server leaves most of its cores idle at ``knobs`` (statements wait off the
        CPU): the pool is not what its CPU limits."""
        ...


class LineSearch:
    """Searches ``dim`` from the prober's best tuple and leaves ``center`` at the best value
    found (ties keep the current one)."""

    def __init__(
        self,
        prober: Prober,
        config: PooltuneConfig,
        dim: KnobDim,
        *,
        high_cap: int,
        rules: Rules,
        low_bound: float = -math.inf,
        high_bound: float = math.inf,
        look_farther: bool = True,
    ) -> None:
        self._prober = prober
        self._config = config
        self.dim = dim
        self.high_cap = high_cap
        self._rules = rules
        #: How probes are judged: ``rules`` until a first gain survived its re-test.
        self._judge = rules
        self.center = dict(prober.top)
        self.low_bound = low_bound
        self.high_bound = high_bound
        #: Whether a tie a small step up sends a probe a larger step farther (off for a
        #: recommended start: its range already says where the best lies; a gain, not a
        #: tie, widens the search).
        self.look_farther = look_farther
        #: Ties after large steps (plateau evidence).
        self.flat_votes = 0
        #: The steps that improved: (new coordinate, measured log gain, log2 units moved),
        #: for the step control.
        self._climbed: list[tuple[float, float, float]] = []
        #: Coordinates of probes that lost beyond the tolerance (they bound the economy walk).
        self.worse: list[float] = []
        #: Probes above the center judged level with it: ties that may hide a small gain,
        #: which the economy walk's losses must not add to (:meth:`Search._economy`).
        self.tied_above: list[dict[str, int]] = []
        self._forced = False
        #: A move was taken on a verdict the sample cap forced.
        self.unproven = False
        #: Ties keep the value: the (before, after) pair whose gain survived a re-test.
        self.confirmed: tuple[dict[str, int], dict[str, int]] | None = None

    def run(self, step: float, first_side: int) -> Program:
        start = dict(self.center)
        direction = yield from self._find_direction(step, first_side)
        if self._rules.stay and self.center != start:
            # Before building on it, the first gain must survive a re-test.
            kept = yield from self._prober.confirm(self.dim, start, self.center)
            if not kept:
                self._prober.top = self.center = start
                return
            self.confirmed = (start, dict(self.center))
            self.unproven = False
            # The knob is shown to matter this way: a later step needs no more than a pool
            # size's does (one the sample cap forced leaves the value to be re-tested).
            self._judge = replace(self._rules, stay=False)
        if direction == 0 and self._rules.stay:
            return  # ties keep the value: no side improved, nothing to refine
        h = step
        if direction != 0:
            h = yield from self._expand(direction, h)
        yield from self._refine(h / 2.0)

    def run_from(self, direction: int, step: float) -> Program:
        """Continue along ``direction`` (a probe that way already improved) with ``step``."""
        h = yield from self._expand(direction, step)
        yield from self._refine(h / 2.0)

    def after(self, earlier: LineSearch) -> LineSearch:
        """This line, located again on the same curve after ``earlier``: what that one showed
        (a plateau, sizes that lost) still bounds the economy walk."""
        self.flat_votes += earlier.flat_votes
        self.worse.extend(earlier.worse)
        self.tied_above.extend(earlier.tied_above)
        return self

    # ----------------------------------------------------------------- phases
    def _find_direction(self, step: float, first_side: int) -> Generator[Request, None, int]:
        """Probe one step to each side, ``first_side`` first: the side that improves, else 0
        with both sides bracketed."""
        for side in (first_side, -first_side):
            if not self._open(side):
                continue
            h = self._bounded(step, side)
            probe = self._neighbour(side, h)
            if probe == self.center:
                continue
            verdict, forced = yield from self._probe(probe)
            if self._looks_farther(verdict, forced, side, h, first=True):
                # Once: a larger step, at least the one that makes a tie mean something.
                h = self._bounded(
                    max(h * self._config.expand, self._config.equal_bracket_step), side
                )
                farther = self._beyond(probe, side, h)
                if farther not in (probe, self.center):
                    probe = farther
                    verdict, forced = yield from self._probe(probe)
            if verdict is Verdict.EQUAL and self._rules.stay and side < 0:
                # A knob whose effect is a threshold (a stall limit under the statements'
                # time) is flat until it is crossed: look once at the end of the safe side.
                end = {**self.center, self.dim.name: self.dim.low}
                if end != probe and end != self.center:
                    verdict, _ = yield from self._probe(end)
                    if verdict is Verdict.BETTER:
                        self._climb_to(end, h)
                        self.high_bound = self._coordinate(probe)
                        return 0
            if verdict is Verdict.BETTER:
                if side > 0 and not self._forced:
                    self.worse.append(self._coordinate(self.center))
                self._climb_to(probe, h)
                return side
            self._bound(verdict, probe, side, h)
        return 0

    def _expand(self, direction: int, h: float) -> Generator[Request, None, float]:
        """Step along ``direction`` while each probe is the new best; the scale of the
        bracket left (the last step taken, or the one that improved last)."""
        while True:
            taken = h
            h = self._next_step(direction, h)
            probe = self._neighbour(direction, h)
            if probe == self.center or not self._open(direction):
                return h
            verdict, forced = yield from self._probe(probe)
            if self._looks_farther(verdict, forced, direction, h):
                h = self._bounded(max(h * self._config.expand, taken), direction)
                farther = self._beyond(probe, direction, h)
                if farther != probe and farther != self.center:
                    probe = farther
                    verdict, forced = yield from self._probe(probe)
            if verdict is Verdict.BETTER:
                self._bound_behind(direction)
                self._climb_to(probe, h)
            else:
                self._bound(verdict, probe, direction, h)
                return max(h, taken)

    def _refine(self, h: float) -> Program:
        """Halve the step down to ``min_step`` (``secondary_min_step`` for the other knobs:
        their gains are broad), probing inside the bracket."""
        cfg = self._config
        while h >= (cfg.secondary_min_step if self._rules.stay else cfg.min_step):
            for side in (1, -1):
                probe = self._probe_inside_bracket(side, h)
                if probe is None:
                    continue
                # Inside a bracket the curve's shape leaves only a small gain: a large one
                # may be the server moving, so the reference is looked at again first.
                verdict, _ = yield from self._probe(probe, witness_gain=True)
                if verdict is Verdict.BETTER or self._leans_to(verdict, probe):
                    self._bound_behind(side)
                    self._climb_to(probe, h)
                    break
                self._bound(verdict, probe, side, h)
            h /= 2.0

    # ----------------------------------------------------------------- rules
    def _probe(
        self, probe: dict[str, int], *, witness_gain: bool = False
    ) -> Generator[Request, None, Comparison]:
        rules = replace(self._judge, witness_gain=True) if witness_gain else self._judge
        comparison = yield from self._prober.probe(probe, rules=rules)
        #: Whether the last verdict was forced by the sample cap (it proves nothing, so it
        #: never bounds the economy walk).
        self._forced = comparison.forced
        if comparison.verdict is Verdict.EQUAL and self._coordinate(probe) > self._coordinate(
            self.center
        ):
            self.tied_above.append(dict(probe))
        return comparison

    def _open(self, side: int) -> bool:
        coordinate = self._coordinate(self.center)
        margin = self._config.min_step / 2.0
        if side < 0:
            return coordinate - margin > self.low_bound
        return coordinate + margin < self.high_bound

    def _bounded(self, h: float, side: int) -> float:
        return max(self._config.min_step, min(h, self._prober.max_step(self.dim, side)))

    def _next_step(self, direction: int, h: float) -> float:
        """Grow the step; for the pool size, while the curve still rises in proportion to
        the pool, and cap it
        as the rise fades: on the universal scalability law the elasticity d ln X / d ln N
        is (1 − r²)/(1 + r²) at r = N / N*, so an elasticity ≥ 0.8 puts the peak ≥ 3× away
        (a step ×4 is safe), ≥ 0.4 puts it ≥ 1.5× away (×2), and below that the top is near
        (×1.41). A step past the peak then loses at most what a doubling past it costs."""
        cfg = self._config
        grown = min(h * cfg.expand, cfg.max_step)
        if self._climbed and not self._rules.stay:
            here, gain, units = self._climbed[-1]
            grown = min(grown, elastic_step(gain, units, cfg))
        return self._bounded(grown, direction)

    def _neighbour(self, side: int, h: float) -> dict[str, int]:
        """``h`` log2 units from the center towards ``side``: at least one unit, inside
        [low, high_cap]."""
        dim, base = self.dim, self.center
        if side < 0:
            below = value_below(self._prober, dim, base, h)
            return dict(base) if below is None else {**base, dim.name: min(self.high_cap, below)}
        value = dim.from_unit(dim.to_unit(base[dim.name]) + h)
        if value == base[dim.name]:
            value = base[dim.name] + 1
        return {**base, dim.name: min(self.high_cap, value)}

    def _beyond(self, probe: dict[str, int], side: int, h: float) -> dict[str, int]:
        """``h`` log2 units from the center towards ``side``, and at least one value past
        ``probe``: near the bottom of the scale a doubled step can round to the probe itself
        (from 1, both 2^0.5 and 2^1 are 2), and a look farther must look farther."""
        farther = self._neighbour(side, h)
        name = self.dim.name
        if side > 0 and farther[name] <= probe[name] < self.high_cap:
            return {**farther, name: probe[name] + 1}
        return farther

    def _coordinate(self, knobs: Mapping[str, int]) -> float:
        return self.dim.to_unit(knobs[self.dim.name])

    def _leans_to(self, verdict: Verdict, probe: Mapping[str, int]) -> bool:
        """A tie inside the bracket of a knob shown to matter (its first gain survived its
        re-test) goes to the value that measured higher: both lie within ε of each other,
        and ties keep the value only so that a knob without effect stays at its default."""
        if verdict is not Verdict.EQUAL or self.confirmed is None:
            return False
        return self._prober.gain(probe, self.center) > 0

    def _looks_farther(
        self, verdict: Verdict, forced: bool, side: int, h: float, *, first: bool = False
    ) -> bool:
        """A tie one small step up says little: a small step gains little even on a
        rising flank (gains that each stay inside ε add up), and a tie the noise forced
        proves nothing. Look a larger step farther before closing that side. So, for the
        ``first`` step off the start, with a loss the cap forced or one measured where the
        server leaves its cores idle: there the pool does not cap the CPU, and a small
        step's loss is the noise of a stalling server more often than the curve (a real
        IO-bound load stalled at 2 and 3 groups, best 16). Past gains, a loss is the peak."""
        cfg = self._config
        unproven_loss = (
            first and verdict is Verdict.WORSE and (forced or self._prober.cores_idle(self.center))
        )
        unproven = forced or unproven_loss
        small = h < cfg.equal_bracket_step * (cfg.expand if unproven else 1.0)
        return (
            self.look_farther
            and (verdict is Verdict.EQUAL or unproven_loss)
            and side > 0
            and not self._rules.stay
            and small
        )

    def _climb_to(self, probe: dict[str, int], h: float) -> None:
        """Move to a better probe, remembering the way (along the direction of travel); a
        move on a forced verdict leaves the value unproven (``unproven``)."""
        self.unproven = self.unproven or self._forced
        here, there = self._coordinate(self.center), self._coordinate(probe)
        gain = self._prober.gain(probe, self.center)
        self._climbed.append((there, gain, abs(there - here) or h))
        self._prober.top = self.center = probe

    def _bound_behind(self, side: int) -> None:
        """The center about to be left for a better probe bounds the search behind it (and,
        below, shown to lose, bounds the economy walk)."""
        if side > 0:
            self.low_bound = self._coordinate(self.center)
            if not self._forced:
                self.worse.append(self.low_bound)
        else:
            self.high_bound = self._coordinate(self.center)

    def _bound(self, verdict: Verdict, probe: Mapping[str, int], side: int, h: float) -> None:
        """A probe that did not win closes its side. Equal a small step away means no gain
        that way (the center bounds); worse, or equal a large step away (two flanks of a
        peak, a plateau vote), and the best may lie between (the probe bounds)."""
        step = self._config.equal_bracket_step
        if verdict is Verdict.WORSE and not self._forced:
            self.worse.append(self._coordinate(probe))
        if verdict is Verdict.EQUAL and h >= step and not self._forced:
            self.flat_votes += 1
        bound = (
            self._coordinate(self.center)
            if verdict is Verdict.EQUAL and h <= step
            else self._coordinate(probe)
        )
        if side < 0:
            self.low_bound = max(self.low_bound, bound)
        else:
            self.high_bound = min(self.high_bound, bound)

    def _probe_inside_bracket(self, side: int, h: float) -> dict[str, int] | None:
        """The refinement probe ``h`` towards ``side``, or None when it falls on or outside
        the bracket (integer values: a half step may round onto a point bracketed out)."""
        margin = self._config.min_step / 2.0
        target = self._coordinate(self.center) + side * h
        if (side < 0 and target <= self.low_bound + margin) or (
            side > 0 and target >= self.high_bound - margin
        ):
            return None
        probe = self._neighbour(side, h)
        if (
            probe == self.center
            or self._coordinate(probe) <= self.low_bound + 1e-9
            or self._coordinate(probe) >= self.high_bound - 1e-9
        ):
            return None
        return probe


def value_below(prober: Prober, dim: KnobDim, base: Mapping[str, int], h: float) -> int | None:
    """The value ``h`` log2 units below ``base`` (at least one unit), no lower than the
    prober's :meth:`~Prober.lowest_below`; None when no smaller value may be probed."""
    value = min(base[dim.name] - 1, dim.from_unit(dim.to_unit(base[dim.name]) - h))
    value = max(value, prober.lowest_below(dim, base))
    return None if value >= base[dim.name] else value


def elastic_step(gain: float, units: float, config: PooltuneConfig) -> float:
    """The largest step (log2) towards the peak after a rise of ``gain`` (log) over ``units``
    (log2): on the universal scalability law an elasticity d ln X / d ln N ≥ 0.8 puts the
    peak ≥ 3× away (×4), ≥ 0.4 ≥ 1.5× away (×2), below that it is near (×1.41)."""
    elasticity = gain / (max(units, 1e-9) * math.log(2.0))
    if elasticity < 0.4:
        return 0.5
    return 1.0 if elasticity < 0.8 else config.max_step


def peak_distance(gain: float, units: float) -> float:
    """How far (log2) above a size the peak lies, if the curve rose by ``gain`` (log) over
    the ``units`` (log2) below it, on the universal scalability law without serial part
    (X ∝ r/(1 + r²), r = N/N*; a serial part only brings the peak nearer): the r whose
    secant over the same span rose as much, found by bisection; 0 if none did."""

    def rise(r: float) -> float:
        below = r * 2.0**-units
        return math.log(r / (1.0 + r * r)) - math.log(below / (1.0 + below * below))

    if units <= 0 or gain <= rise(1.0):
        return 0.0
    low, high = 1e-3, 1.0  # rise() falls as r grows
    if gain >= rise(low):
        return -math.log2(low)
    for _ in range(40):
        middle = 0.5 * (low + high)
        if rise(middle) > gain:
            low = middle
        else:
            high = middle
    return -math.log2(0.5 * (low + high))
