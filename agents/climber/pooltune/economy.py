"""Thread economy: walk the pool size down from the best size while the loss stays inside the
tolerance, every step judged against the best size itself (re-measured), never against the
last step, so small losses cannot add up.

The walk is a bisection in log2 between the smallest size shown to tie with the best and
the largest size not shown to tie, which bounds the walk from below. A tie must be shown:
the loss plus ``tie_z`` standard errors must stay inside ``economy_epsilon``; an unproven
tie is a loss. Why: docs/climber.md ("Thread economy").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Mapping
from dataclasses import replace

from agents.climber.base import KnobDim
from agents.climber.pooltune.config import PooltuneConfig
from agents.climber.pooltune.evidence import Rules, Verdict
from agents.climber.pooltune.line_search import Prober, Program, Request, value_below


class EconomyWalk:
    """Walks ``dim`` down from the prober's best tuple; ``chosen`` is the smallest value
    shown to tie with the best (the best itself if none)."""

    def __init__(
        self,
        prober: Prober,
        config: PooltuneConfig,
        dim: KnobDim,
        *,
        floor: float,
        cpu_count: int,
        tolerance: float,
        tie_z: float,
        clock: Callable[[], int],
        climb_began: int,
    ) -> None:
        self._prober = prober
        self._config = config
        self.dim = dim
        self.best = dict(prober.top)
        self.chosen = dict(prober.top)
        #: The largest coordinate known to lose more than the tolerance, or rolled back from.
        self.floor = max(floor, self._rolled_back_below(self.best))
        self._cpu_count = cpu_count
        self._tolerance = tolerance
        self._tie_z = tie_z
        #: The climber's step count: the walk spends at most ``economy_budget`` steps.
        self._clock = clock
        self._climb_began = climb_began
        #: Sizes whose tie fresh samples already showed (a gain below, re-tested and tied).
        self._retested: list[dict[str, int]] = []

    def run(self, step: float) -> Program:
        """Bisect down from ``chosen``: a shown tie is chosen (and the step grows), a proven
        gain makes the probe the best, anything else bounds the walk (the floor)."""
        cfg = self._config
        #: The sizes shown to tie, in the order the walk accepted them (largest first).
        tied: list[dict[str, int]] = []
        h = step
        # Economy is worth little next to settling: on a noisy server the walk stops
        # probing once its budget is spent and keeps the smallest tie shown so far.
        deadline = min(self._clock() + cfg.economy_budget, self._climb_began + cfg.settle_steps)
        while h >= cfg.min_step and self._clock() < deadline:
            h = min(h, self._prober.max_step(self.dim, -1))
            probe = self._below(self.chosen, h)
            if probe is None:
                h /= 2.0
                continue
            rules = self._rules(probe)
            if self._fell_below():
                # Between the smallest tie and a size shown to lose the curve falls: there a
                # plateau's tolerance buys a fraction of a step of threads for the loss it
                # buys a whole step with on the plateau.
                rules = replace(rules, loss_tolerance=min(self._tolerance, cfg.epsilon))
            verdict, forced = yield from self._prober.probe(probe, rules=rules, reference=self.best)
            if verdict is Verdict.BETTER:
                # A gain the sample cap forced is a tie; a shown one is re-tested.
                verdict = Verdict.EQUAL if forced else (yield from self._gain_below(probe))
            if verdict is Verdict.BETTER:
                # The best lies lower than the line search saw: it is the new reference.
                self.best = self.chosen = dict(probe)
                self._prober.top = dict(probe)
                tied.clear()
                # The line search's losses below were measured against a best now beaten
                # below it: the curve is not what it saw, and they no longer bound the walk.
                # A size rolled back from fell sharply: that still bounds it.
                self.floor = self._rolled_back_below(probe)
            elif verdict is Verdict.EQUAL:
                self.chosen = dict(probe)
                tied.append(dict(probe))
                h = min(h * cfg.expand, cfg.max_step)
            else:
                self.floor = self._coordinate(probe)
                h /= 2.0
        yield from self._retest(tied, deadline)

    def _gain_below(self, probe: dict[str, int]) -> Generator[Request, None, Verdict]:
        """A smaller pool measured better than the best: on a plateau under drift that is
        often luck, and taking it as the new reference would let the next ties lose on top
        of its hidden loss. The gain is re-tested on fresh samples; unconfirmed, it is a tie,
        and one those fresh samples kept inside the tolerance needs no second re-test."""
        rules = Rules(stay=True, z=self._config.confirm_z, loss_tolerance=self._tolerance)
        comparison = yield from self._prober.retest(self.best, probe, rules=rules)
        if comparison.verdict is Verdict.EQUAL:
            self._retested.append(dict(probe))
        return Verdict.BETTER if comparison.verdict is Verdict.BETTER else Verdict.EQUAL

    def _retest(self, tied: list[dict[str, int]], deadline: int) -> Program:
        """The walk keeps the smallest of the sizes it accepted, so the one whose samples
        flattered it most is the likeliest kept (the winner's curse): it must show its tie
        with the best again on fresh samples, else the walk backs off to the next larger
        size it accepted. A tie that fresh samples already showed (:meth:`_gain_below`) is
        not looked at again."""
        if not tied or self.chosen in self._retested:
            return
        # The re-test runs past the walk's budget, but not into the time the climb needs
        # to settle: four visits and the lag after each change.
        cfg = self._config
        cost = 4 * (cfg.economy_visit_samples + cfg.lag_samples)
        settle_by = self._climb_began + cfg.settle_steps
        if self._clock() >= deadline and self._clock() + cost > settle_by:
            # No time left to look again: the next larger size accepted is the safer bet.
            tied.pop()
            self.chosen = dict(tied[-1]) if tied else dict(self.best)
            return
        # A second look, so shorter than the first (one A/B/A/B), on unbiased samples: the
        # loss measured must stay inside the tolerance (a tie shown again on ten samples
        # would fail a true tie about half the time); the first look already asked fewer
        # groups than cores to measure no lower.
        visits = self._config.economy_visit_samples
        rules = replace(
            self._rules(self.chosen), max_samples=2 * visits, prove_tie=False, shown_tie_z=0.0
        )
        comparison = yield from self._prober.retest(self.best, self.chosen, rules=rules)
        if comparison.verdict is Verdict.WORSE:
            tied.pop()
            self.chosen = dict(tied[-1]) if tied else dict(self.best)

    def _fell_below(self) -> bool:
        """A size within one step (log2) below ``chosen`` was shown to lose or rolled back
        from: the floor lies that close, so every probe of the walk lies on the fall."""
        return self.floor > -math.inf and self._coordinate(self.chosen) - self.floor <= 1.0

    def _rules(self, probe: Mapping[str, int]) -> Rules:
        rules = economy_rules(self._config, probe, self.dim, self._cpu_count)
        return replace(rules, loss_tolerance=self._tolerance, shown_tie_z=self._tie_z)

    def _rolled_back_below(self, knobs: Mapping[str, int]) -> float:
        """The largest coordinate below ``knobs`` the climb rolled back from: it fell
        sharply, not by a few percent, and bounds the walk whatever else was measured."""
        fell = [self._coordinate(k) for k in self._prober.rolled_back]
        return floor_below(fell, self._coordinate(knobs))

    def _coordinate(self, knobs: Mapping[str, int]) -> float:
        return self.dim.to_unit(knobs[self.dim.name])

    def _below(self, base: Mapping[str, int], h: float) -> dict[str, int] | None:
        """The value ``h`` log2 units below ``base`` (at least one unit), above the floor."""
        dim = self.dim
        value = value_below(self._prober, dim, base, h)
        if value is None or dim.to_unit(value) <= self.floor + self._config.min_step / 2:
            return None
        return {**base, dim.name: value}


def economy_rules(
    config: PooltuneConfig, probe: Mapping[str, int], dim: KnobDim, cpu_count: int
) -> Rules:
    """How a smaller pool is judged against the best: a tie must be shown."""
    return Rules(
        loss_tolerance=config.economy_epsilon,
        shown_tie_z=config.tie_z,
        # Fewer groups than cores leave cores idle on a busy server: a tie down there must
        # not have measured lower.
        prove_tie=probe[dim.name] < cpu_count,
        max_samples=config.economy_samples,
        # Showing a tie takes many samples: long visits spend fewer on lags.
        visit_samples=config.economy_visit_samples,
    )


def floor_below(worse: list[float], center: float) -> float:
    """The largest coordinate below ``center`` that lost beyond the tolerance."""
    below = [c for c in worse if c < center]
    return max(below) if below else -math.inf
