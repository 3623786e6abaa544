"""Throughput regret: how much throughput a predicted tuple gives away against the best one.

``regret = 1 − throughput(predicted) / throughput(best)``, read off a stored curve: a sweep from a
dataset, or the (size, throughput) points of a climb trace. Between measured sizes the curve is
interpolated linearly in log(size) (the top of a pool-size curve is flat in log space); outside
the measured range it is held at the nearest end, which is the honest choice for a plateau and
an optimistic one for a falling flank — a model is never rewarded for leaving the measured range.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True, slots=True)
class Curve:
    """Mean throughput at each measured pool size (sizes strictly increasing)."""

    sizes: NDArray[np.float64]
    throughput: NDArray[np.float64]

    @classmethod
    def from_points(cls, points: Iterable[tuple[float, float]]) -> Curve:
        """Average repeated sizes (a climb trace visits sizes many times)."""
        sums: dict[float, list[float]] = {}
        for size, throughput in points:
            if size >= 1 and np.isfinite(throughput) and throughput >= 0:
                sums.setdefault(float(size), []).append(float(throughput))
        if not sums:
            raise ValueError("a curve needs at least one (size ≥ 1, throughput ≥ 0) point")
        sizes = np.array(sorted(sums), dtype=np.float64)
        means = np.array([np.mean(sums[s]) for s in sizes], dtype=np.float64)
        return cls(sizes=sizes, throughput=means)

    @property
    def peak(self) -> float:
        return float(self.throughput.max())

    @property
    def best_size(self) -> float:
        return float(self.sizes[int(np.argmax(self.throughput))])

    def at(self, size: float | Sequence[float] | NDArray[np.float64]) -> NDArray[np.float64]:
        """Throughput at ``size`` (log-linear interpolation, clamped at the ends)."""
        query = np.log(np.clip(np.asarray(size, dtype=np.float64), 1.0, None))
        return np.asarray(np.interp(query, np.log(self.sizes), self.throughput), dtype=np.float64)

    def knee(self, fraction: float = 0.95) -> float:
        """The smallest measured size reaching ``fraction`` of the peak."""
        reaching = self.sizes[self.throughput >= fraction * self.peak]
        return float(reaching.min())


def regret(curve: Curve, predicted_size: float) -> float:
    """1 − throughput at the predicted size / peak; 0 when the curve is all zeros."""
    peak = curve.peak
    if peak <= 0:
        return 0.0
    return float(max(0.0, 1.0 - float(curve.at(predicted_size)) / peak))


def regrets(curves: Sequence[Curve], predicted_sizes: Sequence[float]) -> NDArray[np.float64]:
    if len(curves) != len(predicted_sizes):
        raise ValueError(f"{len(curves)} curves but {len(predicted_sizes)} predictions")
    return np.array([regret(c, s) for c, s in zip(curves, predicted_sizes, strict=True)])


def log_size_error(
    predicted: NDArray[np.float64], best: NDArray[np.float64]
) -> NDArray[np.float64]:
    """|log2(predicted / best)|: the secondary metric where only the optimum is known."""
    errors = np.abs(np.log2(np.clip(predicted, 1, None)) - np.log2(np.clip(best, 1, None)))
    return np.asarray(errors, dtype=np.float64)


@dataclass(frozen=True, slots=True)
class RegretSummary:
    median: float
    p90: float
    mean: float
    count: int

    @classmethod
    def of(cls, values: NDArray[np.float64]) -> RegretSummary:
        if values.size == 0:
            return cls(median=float("nan"), p90=float("nan"), mean=float("nan"), count=0)
        return cls(
            median=float(np.median(values)),
            p90=float(np.quantile(values, 0.9)),
            mean=float(np.mean(values)),
            count=int(values.size),
        )

    def as_dict(self) -> dict[str, float]:
        return {"median": self.median, "p90": self.p90, "mean": self.mean, "count": self.count}
