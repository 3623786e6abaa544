"""Hellerstein's control-law climber moves the pool towards the optimum."""

from __future__ import annotations

from agents.sim import UslCurve
from tests.agents.climber.helpers import SIZE, drive, new


def test_hellerstein_moves_towards_the_optimum() -> None:
    curve = UslCurve.with_peak_at(20, connections=1000, cores=8)
    climber = new("hellerstein", 8)
    run = drive(climber, curve, start={SIZE: 2}, samples=200)
    assert curve.expected({SIZE: run.sizes[-1]})[0] > 0.8 * curve.peak()
