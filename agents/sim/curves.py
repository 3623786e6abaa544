"""Throughput curves the simulated server can run: the queueing model or a formula.

Every curve answers the same questions (:class:`ThroughputCurve`), so :class:`SimServer`
and the benchmark treat a formula curve (curve families A and B of DESIGN.md) and a
simulated workload alike. Formula curves depend on the pool size only; the other knobs
have no effect on them, which tests that a tuple climber leaves them alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from agents.sim.model import (
    DEFAULT_OVERSUBSCRIBE,
    DEFAULT_STALL_LIMIT_MS,
    OVERSUBSCRIBE_KNOB,
    SIZE_KNOB,
    STALL_LIMIT_KNOB,
    FloatArray,
    SimWorkload,
    size_grid,
    smallest_within,
)

#: "Within ε of the best": the economical optimum is the smallest size reaching this share.
OPTIMUM_SHARE = 0.99
KNEE_SHARE = 0.95


@runtime_checkable
class ThroughputCurve(Protocol):
    """A noise-free throughput surface over knob tuples."""

    @property
    def connections(self) -> int: ...

    @property
    def max_size(self) -> int: ...

    @property
    def cores(self) -> int: ...

    def expected(self, knobs: Mapping[str, int]) -> tuple[float, float]:
        """Throughput (/s) and latency (ms) at ``knobs``."""
        ...

    def curve(self, sizes: FloatArray | None = None) -> FloatArray:
        """Throughput over pool sizes (default 1…max_size) at the default other knobs."""
        ...

    def peak(self) -> float:
        """The best throughput over the whole tuple space (the scoring reference)."""
        ...


@dataclass(frozen=True, slots=True)
class WorkloadCurve:
    """A :class:`SimWorkload` seen as a :class:`ThroughputCurve`."""

    workload: SimWorkload
    _cache: dict[tuple[int, int, int], tuple[float, float]] = field(
        default_factory=dict, compare=False, repr=False
    )
    _full_curve: FloatArray | None = field(default=None, compare=False, repr=False)

    @property
    def connections(self) -> int:
        return self.workload.connections

    @property
    def max_size(self) -> int:
        return self.workload.max_size

    @property
    def cores(self) -> int:
        return self.workload.cores

    def expected(self, knobs: Mapping[str, int]) -> tuple[float, float]:
        key = (
            int(knobs.get(SIZE_KNOB, self.workload.cores)),
            int(knobs.get(OVERSUBSCRIBE_KNOB, DEFAULT_OVERSUBSCRIBE)),
            int(knobs.get(STALL_LIMIT_KNOB, DEFAULT_STALL_LIMIT_MS)),
        )
        cached = self._cache.get(key)
        if cached is None:
            cached = self.workload.expected(
                {SIZE_KNOB: key[0], OVERSUBSCRIBE_KNOB: key[1], STALL_LIMIT_KNOB: key[2]}
            )
            self._cache[key] = cached
        return cached

    def curve(self, sizes: FloatArray | None = None) -> FloatArray:
        if sizes is not None:
            return self.workload.curve(sizes)
        # The whole-grid curve serves the optimum, the knee and the peak: computed once.
        if self._full_curve is None:
            object.__setattr__(self, "_full_curve", self.workload.curve())
        assert self._full_curve is not None
        return self._full_curve

    def peak(self) -> float:
        surface, *_ = self.workload.tuple_surface()
        return float(max(np.max(surface), np.max(self.curve())))


class _SizeCurve:
    """What the closed-form curves share: throughput depends on the pool size alone, and
    latency follows from it by Little's law over all the connections."""

    __slots__ = ()
    cores: int
    connections: int
    max_size: int

    def _throughput(self, sizes: FloatArray) -> FloatArray:
        raise NotImplementedError

    def expected(self, knobs: Mapping[str, int]) -> tuple[float, float]:
        size = float(knobs.get(SIZE_KNOB, self.cores))
        throughput = float(self._throughput(np.asarray([size]))[0])
        return throughput, 1000.0 * self.connections / max(throughput, 1e-9)

    def curve(self, sizes: FloatArray | None = None) -> FloatArray:
        return self._throughput(size_grid(self.max_size) if sizes is None else sizes)

    def peak(self) -> float:
        return float(np.max(self.curve()))


@dataclass(frozen=True, slots=True)
class UslCurve(_SizeCurve):
    """Curve family A: the universal scalability law X = λN/(1 + σ(N−1) + κN(N−1))."""

    rate: float
    serial_fraction: float
    coherency: float
    connections: int = 4096
    max_size: int = 128
    cores: int = 8

    @classmethod
    def with_peak_at(
        cls, size: float, *, serial_fraction: float = 0.02, rate: float = 1000.0, **kw: int
    ) -> UslCurve:
        """A curve whose maximum is at ``size`` (N* = √((1−σ)/κ))."""
        return cls(
            rate=rate,
            serial_fraction=serial_fraction,
            coherency=(1.0 - serial_fraction) / size**2,
            **kw,
        )

    def _throughput(self, sizes: FloatArray) -> FloatArray:
        n = np.maximum(sizes, 1.0)
        result: FloatArray = (
            self.rate
            * n
            / (1.0 + self.serial_fraction * (n - 1.0) + self.coherency * n * (n - 1.0))
        )
        return result


@dataclass(frozen=True, slots=True)
class KneeCurve(_SizeCurve):
    """Curve family B: rise then plateau, X = X_max·u/(1 + u^p)^(1/p), u = size/knee.

    ``sharpness`` p sets how abrupt the knee is; a small ``decline`` per doubling above
    the knee models the slight cost of idle threads (0 gives a flat plateau).
    """

    rate: float
    knee_size: float
    sharpness: float = 4.0
    decline: float = 0.0
    connections: int = 4096
    max_size: int = 128
    cores: int = 8

    def _throughput(self, sizes: FloatArray) -> FloatArray:
        u = np.maximum(sizes, 1.0) / self.knee_size
        rise = u / (1.0 + u**self.sharpness) ** (1.0 / self.sharpness)
        fall = 1.0 - self.decline * np.log2(np.maximum(u, 1.0))
        result: FloatArray = self.rate * rise * fall
        return result


def optimum_size(curve: ThroughputCurve, share: float = OPTIMUM_SHARE) -> int:
    """The economical optimum: the smallest size within ``1 − share`` of the best."""
    return smallest_within(curve.curve(), share)


def knee_size(curve: ThroughputCurve, share: float = KNEE_SHARE) -> int:
    """The knee: the smallest size reaching ``share`` (95%) of the best size."""
    return smallest_within(curve.curve(), share)
