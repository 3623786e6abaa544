"""Robust statistics of log throughput: a location that one outlier cannot drag, and a
noise scale from the run's own samples that stalls and heavy tails do not inflate.

Why these (docs/climber.md, "Evidence"): real servers stall for a sample every few
samples and drift by tens of percent; a mean and a standard deviation follow every such
sample, a Huber location and a median of pairwise differences do not.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: Huber's tuning constant: 95% efficiency on Gaussian noise.
HUBER_K = 1.5
#: MAD of a standard normal: a median absolute deviation times this is a standard deviation.
MAD_TO_SIGMA = 1.4826


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return 0.5 * (ordered[middle - 1] + ordered[middle])


def huber_location(values: Sequence[float], scale: float, *, iterations: int = 8) -> float:
    """Huber's M-estimate of location with a known ``scale``: the mean of the values with
    residuals beyond ``HUBER_K`` × ``scale`` pulled in to that distance, from the median.
    Two values cannot tell an outlier, so their estimate is their mean."""
    if not values:
        raise ValueError("no values")
    if len(values) <= 2 or scale <= 0:
        return sum(values) / len(values)
    estimate = median(values)
    limit = HUBER_K * scale
    for _ in range(iterations):
        total = weight = 0.0
        for value in values:
            distance = abs(value - estimate)
            w = 1.0 if distance <= limit else limit / distance
            total += w * value
            weight += w
        updated = total / weight
        if abs(updated - estimate) < 1e-6 * scale:
            return updated
        estimate = updated
    return estimate


def neighbour_scale(visits: Sequence[Sequence[float]]) -> float:
    """A robust per-sample standard deviation from consecutive samples inside each visit:
    blind to a level that moved between visits, but short of the noise's slow part."""
    differences = [abs(visit[i + 1] - visit[i]) for visit in visits for i in range(len(visit) - 1)]
    return MAD_TO_SIGMA * median(differences) / math.sqrt(2.0) if differences else 0.0


def mad_scale(groups: Sequence[Sequence[float]]) -> tuple[float, float]:
    """A robust per-sample standard deviation from ``groups`` (each the samples of one
    tuple) and its degrees of freedom (Σ (n − 1)): the median absolute deviation of every
    sample from its group's median (each scaled by √(n/(n − 1)), the share a group's own
    median takes), as a standard deviation. It holds while fewer than half of a group's
    samples are outliers (stalls)."""
    deviations: list[float] = []
    dof = 0.0
    for group in groups:
        if len(group) < 3:
            continue
        centre = median(group)
        correction = math.sqrt(len(group) / (len(group) - 1.0))
        deviations.extend(abs(value - centre) * correction for value in group)
        dof += len(group) - 1
    if not deviations:
        return 0.0, 0.0
    return MAD_TO_SIGMA * median(deviations), dof


def without_extreme(values: Sequence[float], *, highest: bool) -> list[float]:
    """``values`` less their highest (or lowest) one."""
    if not values:
        return []
    extreme = max(values) if highest else min(values)
    trimmed = list(values)
    trimmed.remove(extreme)
    return trimmed


def standard_error(values: Sequence[float]) -> float:
    """The standard error of the mean of ``values`` (at least two) from their own scatter."""
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1) / len(values))
