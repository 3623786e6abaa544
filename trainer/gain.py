"""The relative throughput curve a model predicts gains with, and the true gains it is judged by.

Each training curve gives a few rows: the profile's features with a pool size (the default,
the best, and sizes drawn log-uniformly up to the connection count) and the log of the
throughput there over the curve's peak (docs/trainer.md, "Predicted gain"). The inference
half is :mod:`service.recommendations.throughput_curve`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import lightgbm as lgb
import numpy as np
from numpy.typing import NDArray

from agents import knobs
from service.recommendations.throughput_curve import (
    LOG_FLOOR,
    ThroughputCurve,
    curve_matrix,
    effective_sizes,
)
from trainer.examples import Example
from trainer.features import matrix_of
from trainer.fit import UNCALIBRATED, base_params

#: Curve points per training example.
POINTS_PER_CURVE = 6
#: The curve model's own LightGBM settings (the search tunes the size model only).
CURVE_PARAMS: dict[str, Any] = {
    "learning_rate": 0.1,
    "num_leaves": 31,
    "min_data_in_leaf": 20,
    "feature_fraction": 0.8,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "lambda_l2": 1.0,
}
CURVE_ROUNDS = 300


def curve_rows(
    examples: Sequence[Example],
    weights: NDArray[np.float64],
    *,
    seed: int,
    points: int = POINTS_PER_CURVE,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(curve matrix, log relative throughput, weight) rows of every example with a curve."""
    rng = np.random.default_rng(seed)
    having = [i for i, e in enumerate(examples) if e.curve is not None and e.curve.peak > 0]
    if not having:
        raise ValueError("no training example has a curve to learn the throughput curve from")
    chosen = [examples[i] for i in having]
    matrix = matrix_of(chosen)
    sizes = np.empty((len(chosen), points))
    targets = np.empty((len(chosen), points))
    for row, example in enumerate(chosen):
        knob = knobs.knob(example.engine, knobs.POOL_SIZE_KNOB[example.engine])
        cap = min(float(knob.maximum), float(example.profile.connections or knob.maximum))
        drawn = np.exp2(rng.uniform(0.0, np.log2(max(cap, 1.0)), size=points - 2))
        sizes[row] = [knob.default_for(example.host.cpu_count), example.optimal_size, *drawn]
    repeated = np.repeat(matrix, points, axis=0)
    flat_sizes = effective_sizes(repeated, sizes.reshape(-1))
    for row, example in enumerate(chosen):
        assert example.curve is not None
        at = example.curve.at(flat_sizes[row * points : (row + 1) * points])
        targets[row] = np.log(np.maximum(at / example.curve.peak, np.exp(LOG_FLOOR)))
    return (
        curve_matrix(repeated, flat_sizes),
        targets.reshape(-1),
        np.repeat(weights[having], points),
    )


def fit_throughput_curve(
    examples: Sequence[Example], weights: NDArray[np.float64], *, seed: int
) -> ThroughputCurve:
    """The relative throughput curve, uncalibrated."""
    matrix, target, weight = curve_rows(examples, weights, seed=seed)
    booster = lgb.train(
        base_params(seed) | CURVE_PARAMS,
        lgb.Dataset(matrix, target, weight=weight),
        num_boost_round=CURVE_ROUNDS,
    )
    return ThroughputCurve(booster=booster, calibration=UNCALIBRATED)


def true_gains(
    examples: Sequence[Example],
    recommended: Mapping[str, NDArray[np.int64]],
    current: Mapping[str, NDArray[np.int64]],
) -> NDArray[np.float64]:
    """Throughput at ``recommended`` / at ``current`` read off each example's curves (the
    pool size's, times a moved secondary knob's); NaN where a curve is missing."""
    out = np.full(len(examples), np.nan)
    for i, example in enumerate(examples):
        size_name = knobs.POOL_SIZE_KNOB[example.engine]
        if example.curve is None or example.curve.peak <= 0:
            continue
        connections = float(example.profile.connections)
        sizes = np.array([recommended[size_name][i], current[size_name][i]], dtype=np.float64)
        if connections > 0:
            sizes = np.minimum(sizes, connections)
        at_recommended, at_current = example.curve.at(sizes)
        if at_current <= 0:
            continue
        gain = float(at_recommended / at_current)
        for name in recommended:
            if name == size_name or recommended[name][i] == current[name][i]:
                continue
            knob_curve = example.knob_curves.get(name)
            if knob_curve is None:
                gain = float("nan")
                break
            moved, held = knob_curve.at([recommended[name][i], current[name][i]])
            gain = gain * float(moved / held) if held > 0 else float("nan")
        out[i] = gain
    return out
