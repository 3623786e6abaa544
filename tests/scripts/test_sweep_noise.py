"""The sweep-design comparison of scripts/sweep_noise.py on series whose nature is known:
white noise (nothing to cancel: pairing only costs) and a level that switches every few
tens of seconds (pairing cancels it)."""

from __future__ import annotations

import numpy as np
import pytest

from scripts.sweep_noise import DESIGNS, Design, design_noise, semivariance_share

V2 = DESIGNS[0]
PAIRED_2S = next(d for d in DESIGNS if d.paired and d.dwell == 2)
PAIRED_5S = next(d for d in DESIGNS if d.paired and d.dwell == 5)


def _white(seconds: int = 600, spread: float = 0.1) -> np.ndarray:
    return 1000.0 * np.exp(np.random.default_rng(7).normal(0.0, spread, seconds))


def _switching(seconds: int = 600, period: int = 40) -> np.ndarray:
    level = np.where((np.arange(seconds) // (period // 2)) % 2 == 0, 1.0, 0.6)
    return level * _white(seconds, 0.02)


def test_a_constant_server_reads_flat_in_every_design() -> None:
    flat = np.full(400, 500.0)
    for design in DESIGNS:
        assert design_noise(flat, design).noise == pytest.approx(0.0, abs=1e-12)


def test_on_white_noise_pairing_only_costs() -> None:
    white = _white()
    assert design_noise(white, PAIRED_5S).noise > 1.1 * design_noise(white, V2).noise
    shares = semivariance_share(white)
    assert min(shares) > 0.85  # every lag brings the whole spread anew


def test_a_level_switching_between_visits_is_cancelled_by_short_pairs() -> None:
    switching = _switching()
    plain, paired = design_noise(switching, V2), design_noise(switching, PAIRED_2S)
    assert paired.noise < 0.5 * plain.noise
    assert paired.seconds_for_target < 0.25 * plain.seconds_for_target
    shares = semivariance_share(switching)
    assert shares[0] < 0.15 < shares[2]  # it holds for a second, not for five


def test_a_series_too_short_for_the_design_is_refused() -> None:
    with pytest.raises(ValueError, match="needs 135 samples"):
        design_noise(np.full(100, 1.0), V2)


def test_the_designs_fit_the_budget_they_are_compared_at() -> None:
    for design in DESIGNS:
        passes = design.passes_within(135.0)
        assert design.seconds(passes) <= 135 + design.dwell
    assert Design("x", 5, 2).seconds(3) == 135
    assert Design("x", 2, 1, paired=True).seconds(4) == 2 * (4 * 16 + 1)
