"""A measured curve's own noise: what "reproduced within noise" is measured against.

Per pool size: the coefficient of variation of the kept samples (seconds apart), the spread of
the visit means (the same size measured minutes apart, so drift is in it), the share of
samples that are stalls (below 40% of the size's median: IO-bound servers drop to 0–40% for
a sample every few samples), and the standard error of the log mean used to weight a fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

#: A sample below this share of its size's median is a stall.
STALL_SHARE = 0.4
#: The smallest standard error of a log mean: slow drift moves a whole sweep by about this.
MIN_LOG_SE = 0.02


def _cv(values: FloatArray) -> float:
    mean = float(np.mean(values)) if values.size else 0.0
    if values.size < 2 or mean <= 0:
        return 0.0
    return float(np.std(values, ddof=1) / mean)


@dataclass(frozen=True)
class CurveNoise:
    """Noise estimates of one curve, per size, and their summaries."""

    sample_cv: FloatArray
    visit_cv: FloatArray
    stall_share: FloatArray
    log_se: FloatArray

    @property
    def cv(self) -> float:
        """The curve's noise: the median over sizes of the samples' CV (the dataset's
        ``noise_cv``), the threshold of "reproduced within noise"."""
        return float(np.median(self.sample_cv))

    @property
    def visit_spread(self) -> float:
        """Median over sizes of the CV of the visit means (spread between visits)."""
        return float(np.median(self.visit_cv))

    @property
    def stall_rate(self) -> float:
        """Share of all samples that are stalls (mean over sizes)."""
        return float(np.mean(self.stall_share))


def curve_noise(samples: Sequence[FloatArray], visits: Sequence[FloatArray]) -> CurveNoise:
    """Noise of a curve from its kept samples and visit means, one array of each per size."""
    if len(samples) != len(visits) or not samples:
        raise ValueError("need the samples and the visit means of every size (at least one)")
    sample_cv = np.array([_cv(s) for s in samples], dtype=np.float64)
    visit_cv = np.array([_cv(v) for v in visits], dtype=np.float64)
    stall = np.array(
        [float(np.mean(s < STALL_SHARE * np.median(s))) if s.size else 0.0 for s in samples],
        dtype=np.float64,
    )
    counts = np.array([max(s.size, 1) for s in samples], dtype=np.float64)
    visit_counts = np.array([max(v.size, 1) for v in visits], dtype=np.float64)
    log_se = np.maximum.reduce(
        [
            sample_cv / np.sqrt(counts),
            visit_cv / np.sqrt(visit_counts),
            np.full(len(samples), MIN_LOG_SE),
        ]
    )
    return CurveNoise(sample_cv=sample_cv, visit_cv=visit_cv, stall_share=stall, log_se=log_se)
