"""The .NET hill climbing baseline: its harmonic and its bias below the peak."""

from __future__ import annotations

import cmath

import pytest

from agents.climber import DotnetClimber
from agents.climber.dotnet import goertzel
from agents.sim import UslCurve
from tests.agents.climber.helpers import SIZE, drive, new


def test_goertzel_equals_the_dft_coefficient() -> None:
    series = [3.0, 1.0, -2.0, 0.5, 1.0, 2.0, -1.0, 0.0]
    dft = sum(v * cmath.exp(-2j * cmath.pi * t / 4) for t, v in enumerate(series)) / len(series)
    # Goertzel's phase reference is the last sample; the magnitude is the DFT's.
    assert abs(goertzel(series, 4)) == pytest.approx(abs(dft))


def test_dotnet_climbs_a_rising_curve_and_settles_below_the_peak() -> None:
    curve = UslCurve.with_peak_at(30, connections=1000, cores=8)
    climber = new("dotnet", 8)
    run = drive(climber, curve, start={SIZE: 2}, samples=400)
    assert max(run.sizes) > 10
    settled = sum(run.sizes[-40:]) / 40
    assert 5 < settled < 30  # the 15% bias keeps it below the peak
    assert isinstance(climber, DotnetClimber)
