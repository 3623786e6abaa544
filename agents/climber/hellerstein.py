"""Hellerstein et al.'s control-law climber, re-implemented from its description.

x_{k+1} = x_k + sign(Δ_k)·⌈a_k·|Δ_k|⌉ with a_k = e^(−s)·g/√(k+1): Δ_k the measured
elasticity of throughput to size times the last step, s the relative noise. Pool size
only, never restarts. Details: docs/climber.md ("Hellerstein's control law").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from agents.climber.base import Climber, KnobSpace, Sample


@dataclass(frozen=True, slots=True)
class HellersteinConfig:
    gain: float = 5.0
    #: Samples averaged per control interval.
    interval: int = 2
    #: Largest move, as a multiple of the current size (keeps the law from overshooting).
    max_relative_step: float = 1.0


class HellersteinClimber(Climber):
    name = "hellerstein"

    def __init__(
        self, space: KnobSpace, cpu_count: int, config: HellersteinConfig | None = None
    ) -> None:
        super().__init__(space, cpu_count)
        self.config = config or HellersteinConfig()
        self._k = 0
        self._window: list[float] = []
        self._previous: tuple[float, float] | None = None
        self._noise = 0.0
        self._last_moves: list[int] = []

    @property
    def state(self) -> str:
        return "climbing"

    @property
    def converged(self) -> bool:
        return len(self._last_moves) >= 6 and all(abs(m) <= 1 for m in self._last_moves[-6:])

    def reset(
        self,
        start: Mapping[str, int],
        *,
        plausible_range: Mapping[str, tuple[int, int]] | None = None,
    ) -> None:
        self._current = self.space.clip(start)
        self._k = 0
        self._window.clear()
        self._previous = None

    def step(self, sample: Sample) -> dict[str, int]:
        cfg = self.config
        self.steps += 1
        size = self.space.size
        self._window.append(sample.throughput)
        if len(self._window) < cfg.interval:
            return dict(self._current)
        mean = sum(self._window) / len(self._window)
        if len(self._window) > 1 and mean > 0:
            spread = math.sqrt(sum((v - mean) ** 2 for v in self._window) / (len(self._window) - 1))
            self._noise = 0.8 * self._noise + 0.2 * spread / mean
        self._window.clear()
        x = float(self._current[size.name])
        if self._previous is None:
            step = 1
        else:
            px, py = self._previous
            if x == px or py <= 0:
                step = 1 if x < size.high else -1
            else:
                elasticity = ((mean - py) / py) / ((x - px) / px)
                delta = elasticity * abs(x - px)
                a = math.exp(-self._noise) * cfg.gain / math.sqrt(self._k + 1)
                magnitude = min(math.ceil(a * abs(delta)), max(1, int(cfg.max_relative_step * x)))
                step = int(math.copysign(magnitude, delta)) if delta != 0 else 0
        self._k += 1
        self._previous = (x, mean)
        self._last_moves = [*self._last_moves[-15:], step]
        self._current[size.name] = size.clip(x + step)
        self._best = dict(self._current)
        return dict(self._current)
