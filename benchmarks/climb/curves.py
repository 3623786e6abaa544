"""Curves of the new families: a wide plateau, a cliff past the optimum, a stall limit that
matters. Each is a :class:`agents.sim.ThroughputCurve`, so the simulated server runs it.

Why these shapes (issue 15, DESIGN.md "Evidence beyond the simulator"):

- :class:`PlateauCurve`: flat over a 3–8× range of sizes, a gentle rise below it and a
  fall above: every size ties with its neighbour, but the ends differ.
- :class:`CliffCurve`: a curve whose throughput halves past twice its best size (a pool
  that overflows a resource): far probes above the optimum are dangerous.
- :class:`StallLimitCurve`: a few long statements stall their groups until
  ``thread_pool_stall_limit`` lets the group start another thread; lowering the limit from
  500 ms to a few tens of ms multiplies throughput (the AliSQL/Percona thread-pool report:
  22K to 52K QPS), while a very short limit costs timer ticks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from agents.sim.curves import ThroughputCurve, optimum_size
from agents.sim.model import SIZE_KNOB, STALL_LIMIT_KNOB, FloatArray, size_grid

DEFAULT_STALL_LIMIT = 500
#: Stall limits over which the best of a :class:`StallLimitCurve` is searched (ms).
_STALL_GRID = np.arange(10.0, 2001.0)


def _latency(connections: int, throughput: float) -> float:
    return 1000.0 * connections / max(throughput, 1e-9)


@dataclass(frozen=True, slots=True)
class PlateauCurve:
    """Rise to ``knee`` (sharpness p), flat up to ``knee × width``, then fall:
    X = rate · u/(1 + u^p)^(1/p) / (1 + fall·(v − 1)), u = size/knee, v = size/(knee·width)
    (v floored at 1)."""

    rate: float
    knee: float
    width: float
    sharpness: float
    fall: float
    connections: int = 4096
    max_size: int = 128
    cores: int = 8

    def _throughput(self, sizes: FloatArray) -> FloatArray:
        n = np.maximum(sizes, 1.0)
        u = n / self.knee
        rise = u / (1.0 + u**self.sharpness) ** (1.0 / self.sharpness)
        v = np.maximum(n / (self.knee * self.width), 1.0)
        result: FloatArray = self.rate * rise / (1.0 + self.fall * (v - 1.0))
        return result

    def expected(self, knobs: Mapping[str, int]) -> tuple[float, float]:
        value = float(self._throughput(np.asarray([float(knobs.get(SIZE_KNOB, self.cores))]))[0])
        return value, _latency(self.connections, value)

    def curve(self, sizes: FloatArray | None = None) -> FloatArray:
        return self._throughput(size_grid(self.max_size) if sizes is None else sizes)

    def peak(self) -> float:
        return float(np.max(self.curve()))


@dataclass(frozen=True, slots=True)
class CliffCurve:
    """``base`` whose throughput halves above ``edge`` (twice the base's best size)."""

    base: ThroughputCurve
    edge: float

    @classmethod
    def past_twice_the_best(cls, base: ThroughputCurve) -> CliffCurve:
        return cls(base, 2.0 * optimum_size(base))

    @property
    def connections(self) -> int:
        return self.base.connections

    @property
    def max_size(self) -> int:
        return self.base.max_size

    @property
    def cores(self) -> int:
        return self.base.cores

    def expected(self, knobs: Mapping[str, int]) -> tuple[float, float]:
        value, _ = self.base.expected(knobs)
        if knobs.get(SIZE_KNOB, self.cores) > self.edge:
            value *= 0.5
        return value, _latency(self.connections, value)

    def curve(self, sizes: FloatArray | None = None) -> FloatArray:
        grid = size_grid(self.max_size) if sizes is None else sizes
        values = self.base.curve(grid)
        result: FloatArray = np.where(grid > self.edge, 0.5 * values, values)
        return result

    def peak(self) -> float:
        return float(np.max(self.curve()))


@dataclass(frozen=True, slots=True)
class StallLimitCurve:
    """``base`` (over the pool size) times the share of group time not blocked by long
    statements: each blocks its group for min(stall limit, ``long_ms``), ``long_rate`` of
    them per second and group, and each timer tick costs ``tick_ms`` of a stall limit."""

    base: ThroughputCurve
    long_rate: float
    long_ms: float
    tick_ms: float

    @classmethod
    def with_gain(
        cls, base: ThroughputCurve, *, gain: float, long_ms: float, tick_ms: float
    ) -> StallLimitCurve:
        """Long statements so frequent that 30 ms instead of 500 ms multiplies throughput by
        ``gain`` (timer cost aside): (1 + 0.5 r)/(1 + 0.03 r) = gain."""
        rate = (gain - 1.0) / (0.5 - 0.03 * gain)
        return cls(base, long_rate=rate, long_ms=long_ms, tick_ms=tick_ms)

    @property
    def connections(self) -> int:
        return self.base.connections

    @property
    def max_size(self) -> int:
        return self.base.max_size

    @property
    def cores(self) -> int:
        return self.base.cores

    def factor(self, stall_ms: float | FloatArray) -> FloatArray:
        stall = np.maximum(np.asarray(stall_ms, dtype=np.float64), 1.0)
        blocked = self.long_rate * np.minimum(stall, self.long_ms) / 1000.0
        result: FloatArray = 1.0 / (1.0 + blocked) / (1.0 + self.tick_ms / stall)
        return result

    def expected(self, knobs: Mapping[str, int]) -> tuple[float, float]:
        value, _ = self.base.expected(knobs)
        stall = float(knobs.get(STALL_LIMIT_KNOB, DEFAULT_STALL_LIMIT))
        value *= float(self.factor(stall))
        return value, _latency(self.connections, value)

    def curve(self, sizes: FloatArray | None = None) -> FloatArray:
        """Over pool sizes at the default stall limit."""
        result: FloatArray = self.base.curve(sizes) * float(self.factor(DEFAULT_STALL_LIMIT))
        return result

    def best_factor(self) -> float:
        return float(np.max(self.factor(_STALL_GRID)))

    def peak(self) -> float:
        return self.base.peak() * self.best_factor()

    def gain_share(self, stall_ms: float) -> float:
        """The share of the stall limit's possible gain that ``stall_ms`` gets (1: all)."""
        default = float(self.factor(DEFAULT_STALL_LIMIT))
        best = self.best_factor()
        if best <= default:
            return 1.0
        return (float(self.factor(stall_ms)) - default) / (best - default)
