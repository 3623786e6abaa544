"""Baselines, scored exactly like the models: each maps examples to predicted pool sizes.

- ``default``: the engine default (size = cores for MariaDB/Percona, 20 for PgBouncer).
- ``2cores+disk``: PgBouncer's usual rule of thumb, 2 × cores + disks (one disk: the
  profile does not know how many), clipped to the knob's bounds.
- ``heuristic``: cores × (1 + W/S), clipped (the service's fallback, :mod:`agents.heuristic`).
- ``little``: Little's law — the concurrency the server already holds, throughput × latency.
- ``nearest``: nearest-workload mapping as OtterTune does it: the best tuple of the closest
  training profile (standardised log features).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from sklearn.neighbors import NearestNeighbors

from agents import knobs
from agents.heuristic import heuristic_pool_size
from service.recommendations.workload_features import FEATURES, feature_matrix
from trainer.examples import Example

#: The features the nearest-workload baseline measures distance on.
NEAREST_FEATURES = (
    "log_cpu_count",
    "log_connections",
    "log_active_connections",
    "log_qps",
    "log_latency_ms",
    "log_blocking_coefficient",
    "log_cpu_utilisation",
)


def _size_knob(example: Example) -> knobs.Knob:
    return knobs.knob(example.engine, knobs.POOL_SIZE_KNOB[example.engine])


def default_sizes(examples: Sequence[Example]) -> NDArray[np.float64]:
    return np.array(
        [_size_knob(e).default_for(e.host.cpu_count) for e in examples], dtype=np.float64
    )


#: Disks in the "2 × cores + disks" rule: one, as nothing measures it.
RULE_OF_THUMB_DISKS = 1


def rule_of_thumb_sizes(examples: Sequence[Example]) -> NDArray[np.float64]:
    return np.array(
        [_size_knob(e).clip(2 * e.host.cpu_count + RULE_OF_THUMB_DISKS) for e in examples],
        dtype=np.float64,
    )


def heuristic_sizes(examples: Sequence[Example]) -> NDArray[np.float64]:
    return np.array([heuristic_pool_size(e.host, e.profile) for e in examples], dtype=np.float64)


def little_sizes(examples: Sequence[Example]) -> NDArray[np.float64]:
    sizes = []
    for e in examples:
        knob = _size_knob(e)
        rate = e.profile.qps or e.profile.tps
        if e.profile.latency_ms is None or rate <= 0:
            sizes.append(knob.default_for(e.host.cpu_count))
            continue
        concurrency = rate * e.profile.latency_ms / 1000.0
        if e.profile.connections > 0:
            concurrency = min(concurrency, e.profile.connections)
        sizes.append(knob.clip(max(1.0, math.ceil(concurrency))))
    return np.array(sizes, dtype=np.float64)


class NearestWorkload:
    """1-nearest-neighbour on standardised log features; missing values take the median."""

    def __init__(self, features: Sequence[str] = NEAREST_FEATURES) -> None:
        self.features = tuple(features)

    def _matrix(self, examples: Sequence[Example]) -> NDArray[np.float64]:
        columns = [FEATURES.index(name) for name in self.features]
        return feature_matrix((e.host, e.profile) for e in examples)[:, columns]

    def fit(self, examples: Sequence[Example]) -> NearestWorkload:
        if not examples:
            raise ValueError("nearest-workload mapping needs at least one training example")
        matrix = self._matrix(examples)
        self.median_ = np.nan_to_num(np.nanmedian(matrix, axis=0), nan=0.0)
        filled = np.where(np.isnan(matrix), self.median_, matrix)
        self.scale_ = np.where(filled.std(axis=0) > 0, filled.std(axis=0), 1.0)
        self.index_ = NearestNeighbors(n_neighbors=1).fit(filled / self.scale_)
        self.sizes_ = np.array([e.optimal_size for e in examples], dtype=np.float64)
        return self

    def predict(self, examples: Sequence[Example]) -> NDArray[np.float64]:
        matrix = self._matrix(examples)
        points = np.where(np.isnan(matrix), self.median_, matrix) / self.scale_
        _, nearest = self.index_.kneighbors(points)
        return np.asarray(self.sizes_[nearest[:, 0]], dtype=np.float64)
