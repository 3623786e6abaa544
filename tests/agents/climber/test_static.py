"""The static baseline holds the engine's default tuple whatever it is fed."""

from __future__ import annotations

from agents.climber import StaticClimber
from agents.sim import KneeCurve
from tests.agents.climber.helpers import SIZE, drive, new


def test_static_holds_the_engine_default() -> None:
    climber = new("static", 8)
    run = drive(
        climber, KneeCurve(rate=100, knee_size=30, connections=100), start={SIZE: 77}, samples=20
    )
    assert set(run.sizes) == {8}
    assert isinstance(climber, StaticClimber) and climber.converged
