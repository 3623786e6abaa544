import math

import numpy as np
import pytest

from trainer.regret import Curve, RegretSummary, log_size_error, regret, regrets

# A curve of shape A: rises to 1000 at size 16, falls after.
CURVE_A = Curve.from_points(
    [(1, 100), (2, 200), (4, 400), (8, 800), (16, 1000), (32, 900), (64, 500)]
)


def test_regret_is_zero_at_the_best_size_and_known_elsewhere() -> None:
    assert regret(CURVE_A, 16) == 0.0
    assert regret(CURVE_A, 8) == pytest.approx(0.2)
    assert regret(CURVE_A, 64) == pytest.approx(0.5)


def test_regret_interpolates_in_log_size() -> None:
    # Halfway between 8 and 16 in log space is 8·√2: throughput halfway between 800 and 1000.
    assert regret(CURVE_A, 8 * math.sqrt(2)) == pytest.approx(0.1)


def test_regret_outside_the_measured_range_is_clamped_to_the_ends() -> None:
    assert regret(CURVE_A, 0.2) == pytest.approx(0.9)
    assert regret(CURVE_A, 1000) == pytest.approx(0.5)


def test_repeated_points_are_averaged_and_bad_points_dropped() -> None:
    curve = Curve.from_points([(4, 100), (4, 300), (8, 50), (0, 999), (8, float("nan"))])
    assert curve.sizes.tolist() == [4.0, 8.0]
    assert curve.throughput.tolist() == [200.0, 50.0]
    with pytest.raises(ValueError, match="at least one"):
        Curve.from_points([(0, 5)])


def test_knee_is_the_smallest_size_near_the_peak() -> None:
    plateau = Curve.from_points([(1, 300), (2, 900), (4, 980), (8, 1000), (16, 1000)])
    assert plateau.knee(0.95) == 4.0
    assert plateau.best_size == 8.0


def test_vectorised_regrets_and_summary() -> None:
    values = regrets([CURVE_A, CURVE_A], [16, 8])
    assert values.tolist() == pytest.approx([0.0, 0.2])
    summary = RegretSummary.of(values)
    assert summary.mean == pytest.approx(0.1) and summary.count == 2
    with pytest.raises(ValueError):
        regrets([CURVE_A], [1, 2])


def test_log_size_error_counts_factors_of_two() -> None:
    errors = log_size_error(np.array([8.0, 32.0]), np.array([16.0, 16.0]))
    assert errors.tolist() == [1.0, 1.0]
