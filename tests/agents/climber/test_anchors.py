"""Baselines and the factory: .NET hill climbing, Hellerstein's law, static, make_climber."""

from __future__ import annotations

import cmath

import pytest

from agents.climber import (
    DotnetClimber,
    KnobSpace,
    PooltuneConfig,
    StaticClimber,
    make_climber,
)
from agents.climber.anchors import goertzel
from agents.sim import KneeCurve, UslCurve
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


def test_hellerstein_moves_towards_the_optimum() -> None:
    curve = UslCurve.with_peak_at(20, connections=1000, cores=8)
    climber = new("hellerstein", 8)
    run = drive(climber, curve, start={SIZE: 2}, samples=200)
    assert curve.expected({SIZE: run.sizes[-1]})[0] > 0.8 * curve.peak()


def test_static_holds_the_engine_default() -> None:
    climber = new("static", 8)
    run = drive(
        climber, KneeCurve(rate=100, knee_size=30, connections=100), start={SIZE: 77}, samples=20
    )
    assert set(run.sizes) == {8}
    assert isinstance(climber, StaticClimber) and climber.converged


def test_factory_names_configs_and_errors() -> None:
    space = KnobSpace.from_engine("mariadb", 4, bounds={"thread_pool_size": (2, 32)})
    assert space.size.name == "thread_pool_size"
    assert (space.size.low, space.size.high, space.size.default) == (2, 32, 4)
    assert space.names == (
        "thread_pool_size",
        "thread_pool_oversubscribe",
        "thread_pool_stall_limit",
    )
    for name in ("pooltune", "reference", "dotnet", "hellerstein", "static"):
        assert make_climber(name, knob_space=space, cpu_count=4).name == name
    with pytest.raises(ValueError, match="unknown climber"):
        make_climber("nope", knob_space=space, cpu_count=4)
    with pytest.raises(TypeError):
        make_climber("reference", knob_space=space, cpu_count=4, config=PooltuneConfig())
