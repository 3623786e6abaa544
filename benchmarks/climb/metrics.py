"""Scores of one run's normalised throughput series (DESIGN.md, "Benchmark vocabulary")."""

from __future__ import annotations

import math

import numpy as np

T95_SHARE, T95_WINDOW, T95_HOLD = 0.95, 30, 0.9


def t95(normalised: np.ndarray) -> float:
    """First index from which ≥ 90% of the next 30 samples are ≥ 95% of peak; inf if none."""
    good = (normalised >= T95_SHARE).astype(np.float64)
    if good.size < T95_WINDOW:
        return math.inf
    window_share = np.convolve(good, np.ones(T95_WINDOW), mode="valid") / T95_WINDOW
    hits = np.nonzero(window_share >= T95_HOLD)[0]
    return float(hits[0]) if hits.size else math.inf


def reach_and_stay(normalised: np.ndarray, *, final_samples: int = 60) -> bool:
    """The run reached 0.95 of the best (T95: and held it for 90% of the next 30 samples)
    and is there at the end (mean of the last ``final_samples`` ≥ 0.95 of the best)."""
    if not math.isfinite(t95(normalised)):
        return False
    return bool(np.mean(normalised[-final_samples:]) >= T95_SHARE)


def longest_streak(flags: np.ndarray) -> int:
    """The most consecutive true values."""
    longest = streak = 0
    for flag in flags:
        streak = streak + 1 if flag else 0
        longest = max(longest, streak)
    return longest


def percentile(values: list[float], share: float) -> float:
    return float(np.percentile(values, 100.0 * share)) if values else math.nan
