"""The climber registry: the names users' configs use, their config types, and errors."""

from __future__ import annotations

import pytest

from agents.climber import KnobSpace, PooltuneConfig, make_climber


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
