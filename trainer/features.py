"""Training matrices and targets from examples.

The feature matrix is the service's own (:mod:`service.recommendations.workload_features`),
so a model learns from exactly what it will be asked with. Sizes are learned in log2 space:
a factor of two is one unit of error everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from agents import knobs
from service.recommendations.tuple_model import clip_log2_values
from service.recommendations.workload_features import feature_matrix, size_offset
from trainer.examples import Example


def matrix_of(examples: Sequence[Example]) -> NDArray[np.float64]:
    return feature_matrix((e.host, e.profile) for e in examples)


def size_target(size: int | float) -> float:
    return math.log2(max(float(size), 1.0))


def size_residuals(examples: Sequence[Example], matrix: NDArray[np.float64]) -> NDArray[np.float64]:
    """What size models learn: log2(optimal size) − :func:`size_offset`."""
    best = np.array([size_target(e.optimal_size) for e in examples], dtype=np.float64)
    return best - size_offset(matrix)


def clip_sizes(examples: Sequence[Example], log2_sizes: NDArray[np.float64]) -> NDArray[np.float64]:
    """Predicted pool sizes as served: rounded, clipped to the catalog and the connections."""
    out = np.empty(len(examples), dtype=np.float64)
    for engine in {e.engine for e in examples}:
        rows = np.array([i for i, e in enumerate(examples) if e.engine == engine])
        connections = np.array([float(examples[i].profile.connections) for i in rows])
        knob = knobs.knob(engine, knobs.POOL_SIZE_KNOB[engine])
        out[rows] = clip_log2_values(log2_sizes[rows], knob, connections=connections)
    return out
