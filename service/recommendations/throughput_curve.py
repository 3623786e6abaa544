"""The relative throughput curve: log(throughput at a pool size / throughput at the best size)
for a workload profile, and the gain of moving from one size to another.

One LightGBM booster reads the profile's features plus where the size stands: log2 of the
size, and log2 of it over the size theory gives, over the cores and over the connections.
Sizes above the connection count act as the connection count (more threads than connections
never help). Why and how it is trained: docs/trainer.md ("Predicted gain").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import lightgbm as lgb
import numpy as np
from numpy.typing import NDArray

from service.recommendations.booster_scores import booster_scores
from service.recommendations.intervals import Calibration
from service.recommendations.workload_features import FEATURES, size_offset

#: Columns appended to the feature matrix: where the size stands.
SIZE_COLUMNS: tuple[str, ...] = (
    "log2_size",
    "log2_size_over_theory",
    "log2_size_per_core",
    "log2_size_per_connection",
)
CURVE_FEATURES: tuple[str, ...] = FEATURES + SIZE_COLUMNS
#: The lowest relative throughput learned (log): below it a size is simply bad.
LOG_FLOOR = float(np.log(0.02))

_CONNECTIONS = FEATURES.index("connections")
_CORES = FEATURES.index("cpu_count")


def effective_sizes(matrix: NDArray[np.float64], sizes: NDArray[np.float64]) -> NDArray[np.float64]:
    """Pool sizes as they act: at most the connection count where it is known."""
    connections = matrix[:, _CONNECTIONS]
    capped = np.where(connections > 0, np.minimum(sizes, connections), sizes)
    return np.asarray(np.maximum(capped, 1.0), dtype=np.float64)


def curve_matrix(matrix: NDArray[np.float64], sizes: NDArray[np.float64]) -> NDArray[np.float64]:
    """The feature matrix with the size columns of ``sizes`` (one size per row)."""
    log2_size = np.log2(effective_sizes(matrix, sizes))
    connections = matrix[:, _CONNECTIONS]
    per_connection = np.where(
        connections > 0, log2_size - np.log2(np.maximum(connections, 1.0)), np.nan
    )
    columns = np.column_stack(
        [
            log2_size,
            log2_size - size_offset(matrix),
            log2_size - np.log2(np.maximum(matrix[:, _CORES], 1.0)),
            per_connection,
        ]
    )
    return np.hstack([matrix, columns])


@dataclass(frozen=True)
class ThroughputCurve:
    booster: lgb.Booster
    #: Gain intervals by domain (:mod:`service.recommendations.intervals`).
    calibration: Mapping[str, Calibration] = field(default_factory=dict)
    #: The smallest scale of a gain's interval when the size moves (log2 sizes).
    min_scale: float = 0.5

    def log_relative(
        self, matrix: NDArray[np.float64], sizes: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """Predicted log(throughput at ``sizes`` / at the best size), one size per row."""
        scores = booster_scores(self.booster, curve_matrix(matrix, sizes))
        return np.clip(scores, LOG_FLOOR, 0.0)

    def size_gain(
        self,
        matrix: NDArray[np.float64],
        recommended: NDArray[np.float64],
        current: NDArray[np.float64],
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(log gain, scale) of moving from ``current`` to ``recommended`` sizes: exactly
        (0, 0) where both act as the same size; the scale grows with the distance moved."""
        recommended_eff = effective_sizes(matrix, recommended)
        current_eff = effective_sizes(matrix, current)
        both = np.concatenate([matrix, matrix])
        predicted = self.log_relative(both, np.concatenate([recommended_eff, current_eff]))
        rows = matrix.shape[0]
        moved = np.abs(np.log2(recommended_eff) - np.log2(current_eff))
        same = moved < 1e-9
        log_gain = np.where(same, 0.0, predicted[:rows] - predicted[rows:])
        scale = np.where(same, 0.0, np.maximum(moved, self.min_scale))
        return log_gain, scale
