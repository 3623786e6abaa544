"""Pure climbing engines: fed samples, they answer the next knob tuple.

:func:`make_climber` builds one by the name a config uses: ``"pooltune"`` (the default),
``"reference"`` (HWSQL's climber), ``"dotnet"``, ``"hellerstein"`` and ``"static"``
(baselines). How each works: docs/climber.md.
"""

from __future__ import annotations

from collections.abc import Mapping

from agents.climber.base import (
    RESTART_EVENTS,
    Climber,
    ClimberEvent,
    EventKind,
    KnobDim,
    KnobSpace,
    Sample,
)
from agents.climber.dotnet import DotnetClimber, DotnetConfig
from agents.climber.hellerstein import HellersteinClimber, HellersteinConfig
from agents.climber.hwsql import HwsqlClimber, HwsqlConfig, HwsqlState
from agents.climber.pooltune import PooltuneClimber, PooltuneConfig, PooltuneState
from agents.climber.static import StaticClimber, StaticConfig

ClimberConfig = PooltuneConfig | HwsqlConfig | DotnetConfig | HellersteinConfig | StaticConfig

CLIMBERS: Mapping[str, type[Climber]] = {
    "pooltune": PooltuneClimber,
    "reference": HwsqlClimber,
    "dotnet": DotnetClimber,
    "hellerstein": HellersteinClimber,
    "static": StaticClimber,
}
CONFIGS: Mapping[str, type[ClimberConfig]] = {
    "pooltune": PooltuneConfig,
    "reference": HwsqlConfig,
    "dotnet": DotnetConfig,
    "hellerstein": HellersteinConfig,
    "static": StaticConfig,
}


def make_climber(
    name: str,
    *,
    knob_space: KnobSpace,
    cpu_count: int,
    config: ClimberConfig | None = None,
) -> Climber:
    """Build the climber ``name`` over ``knob_space`` (see :meth:`KnobSpace.from_engine`)."""
    try:
        cls = CLIMBERS[name]
    except KeyError:
        raise ValueError(f"unknown climber {name!r}; known: {', '.join(CLIMBERS)}") from None
    if config is not None and not isinstance(config, CONFIGS[name]):
        raise TypeError(f"climber {name!r} takes a {CONFIGS[name].__name__}")
    return cls(knob_space, cpu_count, config)  # type: ignore[call-arg]


__all__ = [
    "CLIMBERS",
    "CONFIGS",
    "RESTART_EVENTS",
    "Climber",
    "ClimberConfig",
    "ClimberEvent",
    "DotnetClimber",
    "DotnetConfig",
    "EventKind",
    "HellersteinClimber",
    "HellersteinConfig",
    "HwsqlClimber",
    "HwsqlConfig",
    "HwsqlState",
    "KnobDim",
    "KnobSpace",
    "PooltuneClimber",
    "PooltuneConfig",
    "PooltuneState",
    "Sample",
    "StaticClimber",
    "StaticConfig",
    "make_climber",
]
