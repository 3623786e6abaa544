"""Calibrated intervals: the served range of a knob and the interval of a predicted gain.

A :class:`Calibration` holds conformal quantiles of normalised held-out residuals: the truth
lies in ``point · 2^[low·scale, high·scale]`` (a knob) or ``gain · e^[low·scale, high·scale]``
(a gain) for the nominal share of held-out cases, where ``scale`` is the model's local width
times the novelty widening. The trainer fits the quantiles by calling these very functions on
held-out cases (``trainer/uncertainty.py``); the method: docs/trainer.md ("Honest
uncertainty").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

#: The domains a calibration is fitted on: held-out simulated and real cases.
SIMULATED = "simulated"
REAL = "real"
#: Gains are stated between 1/1000 and 1000 (the wire's bounds): beyond, only "very uncertain".
GAIN_LOG_BOUND = float(np.log(1000.0))


@dataclass(frozen=True, slots=True)
class Calibration:
    """Normalised residual quantiles (``low`` ≤ 0 ≤ ``high``) and how many cases set them."""

    low: float
    high: float
    count: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high, "count": self.count}

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> Calibration:
        low, high = float(spec["low"]), float(spec["high"])
        if not (np.isfinite(low) and np.isfinite(high)) or low > 0 or high < 0:
            raise ValueError(f"calibration must have low <= 0 <= high, got {low}, {high}")
        return cls(low=low, high=high, count=int(spec.get("count", 0)))


def calibrations_from_dict(spec: Mapping[str, Any] | None) -> dict[str, Calibration]:
    return {str(domain): Calibration.from_dict(c) for domain, c in (spec or {}).items()}


def pick(calibrations: Mapping[str, Calibration], domain: str) -> Calibration | None:
    """The calibration of ``domain``, else the simulated one, else any."""
    for name in (domain, SIMULATED, *calibrations):
        if name in calibrations:
            return calibrations[name]
    return None


def served_range(
    values: NDArray[np.int64],
    scale: NDArray[np.float64],
    calibration: Calibration,
    *,
    lower: NDArray[np.float64] | float,
    upper: NDArray[np.float64] | float,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The inclusive range served around whole ``values``: ``value · 2^[low, high]·scale``
    rounded, at least one step either side of the value (never collapsed to a point unless
    ``lower`` / ``upper`` — the catalog, the connections — force it), inside the bounds."""
    log2_values = np.log2(np.maximum(values, 1).astype(np.float64))
    low = np.rint(np.exp2(log2_values + calibration.low * scale))
    high = np.rint(np.exp2(log2_values + calibration.high * scale))
    low = np.minimum(low, values - 1.0)
    high = np.maximum(high, values + 1.0)
    low = np.clip(low, lower, None)
    high = np.clip(high, None, upper)
    low = np.minimum(low, values)
    high = np.maximum(high, values)
    return low.astype(np.int64), high.astype(np.int64)


def gain_interval(
    log_gain: NDArray[np.float64], scale: NDArray[np.float64], calibration: Calibration
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(estimate, low, high) of a gain from its predicted log; where nothing changes (log
    gain and scale 0) it is exactly 1 with no spread."""

    def bounded(log_values: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(np.exp(np.clip(log_values, -GAIN_LOG_BOUND, GAIN_LOG_BOUND)))

    return (
        bounded(log_gain),
        bounded(log_gain + calibration.low * scale),
        bounded(log_gain + calibration.high * scale),
    )
