"""Measurement noise of 2-second throughput samples, as seen on real servers.

DESIGN.md's measurements on MariaDB: a coefficient of variation of 3–7% over seconds and
about 14% over minutes (so the noise is autocorrelated), ±20% drift over tens of minutes,
occasional stalls. The noise here is a function of the sample index only, drawn from its
own seeded generator, so every climber run against the same seed sees exactly the same
noise sequence whatever knobs it chooses (a fair comparison).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from agents.sim.model import FloatArray

_CHUNK = 512


@dataclass(frozen=True, slots=True)
class NoiseConfig:
    """Parameters of the multiplicative noise on each sample's throughput."""

    #: Coefficient of variation of one sample (stationary, marginal).
    cv: float = 0.05
    #: AR(1) coefficient between consecutive samples' noise.
    autocorrelation: float = 0.5
    #: Probability that a sample is hit by a stall, and the factor applied then.
    spike_probability: float = 0.005
    spike_factor: float = 0.5
    #: Spikes spread uniformly over ``spike_factor ± spike_spread`` (0: all alike). IO-bound
    #: MariaDB drops to 0–40% for a sample every few samples: factor 0.2, spread 0.2.
    spike_spread: float = 0.0
    #: Slow drift: the whole curve moves by up to ±``drift`` over ``drift_period`` samples.
    drift: float = 0.0
    drift_period: int = 900
    #: Whether the first sample after a knob change blends old and new throughput.
    lag: bool = True

    def __post_init__(self) -> None:
        if self.cv < 0 or not 0 <= self.autocorrelation < 1:
            raise ValueError("cv must be ≥ 0 and autocorrelation in [0, 1)")
        if not 0 <= self.spike_probability <= 1 or self.drift < 0 or self.drift_period < 1:
            raise ValueError("spike_probability in [0, 1], drift ≥ 0, drift_period ≥ 1")
        if not 0 <= self.spike_spread <= self.spike_factor:
            raise ValueError("spike_spread in [0, spike_factor]")

    @classmethod
    def quiet(cls) -> NoiseConfig:
        """No noise, no spikes, no drift, no lag: for tests that need exact answers."""
        return cls(cv=0.0, spike_probability=0.0, drift=0.0, lag=False)


class NoiseSequence:
    """Multiplicative factors per sample index, generated lazily in fixed chunks."""

    def __init__(self, config: NoiseConfig, seed: int) -> None:
        self._config = config
        self._rng = np.random.default_rng(seed)
        self._factors: FloatArray = np.empty(0)
        self._state = 0.0
        self._sigma = math.sqrt(math.log1p(config.cv**2))
        self._drift_phase = float(self._rng.uniform(0.0, 2.0 * math.pi))
        self._drift_amplitude = math.log1p(config.drift)

    def factor(self, index: int) -> float:
        while index >= self._factors.size:
            self._extend()
        return float(self._factors[index])

    def _extend(self) -> None:
        cfg = self._config
        start = self._factors.size
        shocks = self._rng.standard_normal(_CHUNK)
        spikes = self._rng.random(_CHUNK) < cfg.spike_probability
        innovation = math.sqrt(1.0 - cfg.autocorrelation**2)
        ar = np.empty(_CHUNK)
        state = self._state
        for i in range(_CHUNK):
            state = cfg.autocorrelation * state + innovation * shocks[i]
            ar[i] = state
        self._state = state
        t = np.arange(start, start + _CHUNK, dtype=np.float64)
        drift = self._drift_amplitude * np.sin(
            2.0 * math.pi * t / cfg.drift_period + self._drift_phase
        )
        log_factor = self._sigma * ar - 0.5 * self._sigma**2 + drift
        spike_level: FloatArray | float = cfg.spike_factor
        if cfg.spike_spread > 0:
            spike_level = self._rng.uniform(
                cfg.spike_factor - cfg.spike_spread, cfg.spike_factor + cfg.spike_spread, _CHUNK
            )
        chunk = np.exp(log_factor) * np.where(spikes, spike_level, 1.0)
        self._factors = np.concatenate([self._factors, chunk])
