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
from collections.abc import Mapping
from dataclasses import replace

from agents.climber.base import KnobDim
from agents.climber.pooltune.config import PooltuneConfig
from agents.climber.pooltune.evidence import Rules, Verdict
from agents.climber.pooltune.line_search import Prober, Program


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
    ) -> None:
        self._prober = prober
        self._config = config
        self.dim = dim
        self.best = dict(prober.top)
        self.chosen = dict(prober.top)
        #: The largest coordinate known to lose more than the tolerance.
        self.floor = floor
        self._cpu_count = cpu_count
        self._tolerance = tolerance

    def run(self, step: float) -> Program:
        """Bisect down from ``chosen``: a shown tie is chosen (and the step grows), a proven
        gain makes the probe the best, anything else bounds the walk (the floor)."""
        cfg = self._config
        h = step
        while h >= cfg.min_step:
            h = min(h, self._prober.max_step(self.dim, -1))
            probe = self._below(self.chosen, h)
            if probe is None:
                h /= 2.0
                continue
            verdict, forced = yield from self._prober.probe(
                probe, rules=self._rules(probe), reference=self.best
            )
            if verdict is Verdict.BETTER and not forced:
                # The best lies lower than the line search saw: it is the new reference.
                self.best = self.chosen = dict(probe)
                self._prober.top = dict(probe)
            elif verdict is Verdict.EQUAL:
                self.chosen = dict(probe)
                h = min(h * cfg.expand, cfg.max_step)
            else:
                self.floor = self._coordinate(probe)
                h /= 2.0

    def _rules(self, probe: Mapping[str, int]) -> Rules:
        rules = economy_rules(self._config, probe, self.dim, self._cpu_count)
        return replace(rules, loss_tolerance=self._tolerance)

    def _coordinate(self, knobs: Mapping[str, int]) -> float:
        return self.dim.to_unit(knobs[self.dim.name])

    def _below(self, base: Mapping[str, int], h: float) -> dict[str, int] | None:
        """The value ``h`` log2 units below ``base`` (at least one unit), above the floor."""
        dim = self.dim
        value = dim.from_unit(self._coordinate(base) - h)
        if value >= base[dim.name]:
            value = base[dim.name] - 1
        if value < dim.low or dim.to_unit(value) <= self.floor + self._config.min_step / 2.0:
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
