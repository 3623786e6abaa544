"""Stalls and heavy tails laid over the simulator's noise (family "stall" and the families
that must survive real-world noise).

What real servers do that the simulator's Gaussian noise does not (DESIGN.md, "Evidence
beyond the simulator"): an IO-bound MariaDB drops to 0–40% of its level for a 2-s sample
every few samples (flush and fsync queues), and now and then a sample is far off either
way (a co-tenant, a checkpoint). Like the simulator's noise, the overlay is a function of
the seed and the sample index only: every climber sees the same sequence.

Whether the target can tell a stall (MariaDB: the pool's stall counter, a queue while
nothing completes) is drawn per run: when it can, most stalls are flagged and a few normal
samples are flagged too; when it cannot, the climber sees throughput alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

_CHUNK = 512


@dataclass(frozen=True, slots=True)
class StallNoise:
    """Parameters of the overlay."""

    #: Share of samples hit by a stall, and the range of the factor applied then.
    stall_share: float = 0.1
    stall_low: float = 0.0
    stall_high: float = 0.4
    #: Share of samples far off either way: × exp(N(0, (tail_scale·cv)²)).
    tail_share: float = 0.03
    tail_scale: float = 4.0
    #: Whether the target reports stalls; if so, the share of stalls it flags and of normal
    #: samples it flags by mistake.
    flags: bool = True
    flag_hit: float = 0.8
    flag_false: float = 0.02

    @classmethod
    def draw(cls, rng: np.random.Generator) -> StallNoise:
        """One server's stall behaviour: from a stall every ~50 samples to every third."""
        return cls(
            stall_share=float(math.exp(rng.uniform(math.log(0.02), math.log(0.33)))),
            tail_share=float(rng.uniform(0.0, 0.05)),
            flags=bool(rng.random() < 0.5),
        )


class StallSequence:
    """Factor and flag per sample index, generated lazily from the seed."""

    def __init__(self, config: StallNoise, cv: float, seed: int) -> None:
        self._config = config
        self._cv = max(cv, 0.02)
        self._rng = np.random.default_rng(seed)
        self._factors = np.empty(0)
        self._flags = np.empty(0, dtype=bool)

    def at(self, index: int) -> tuple[float, bool | None]:
        while index >= self._factors.size:
            self._extend()
        flag = bool(self._flags[index]) if self._config.flags else None
        return float(self._factors[index]), flag

    def _extend(self) -> None:
        cfg, rng = self._config, self._rng
        stalls = rng.random(_CHUNK) < cfg.stall_share
        depth = rng.uniform(cfg.stall_low, cfg.stall_high, _CHUNK)
        tails = rng.random(_CHUNK) < cfg.tail_share
        shocks = rng.standard_normal(_CHUNK) * cfg.tail_scale * self._cv
        flag_draw = rng.random(_CHUNK)
        factor = np.where(stalls, depth, 1.0) * np.where(tails, np.exp(shocks), 1.0)
        flags = np.where(stalls, flag_draw < cfg.flag_hit, flag_draw < cfg.flag_false)
        self._factors = np.concatenate([self._factors, factor])
        self._flags = np.concatenate([self._flags, flags])
