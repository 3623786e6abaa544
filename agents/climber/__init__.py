"""Pure climbing engines: fed samples, they answer the next knob tuple.

Use :func:`make_climber` to build one by name: ``"pooltune"`` (the default),
``"reference"`` (HWSQL's signal-processing climber), ``"dotnet"``, ``"hellerstein"``
and ``"static"`` (baselines).
"""

from __future__ import annotations

from collections.abc import Mapping

from agents.climber.anchors import (
    DotnetClimber,
    DotnetConfig,
    HellersteinClimber,
    HellersteinConfig,
)
from agents.climber.base import (
    RESTART_EVENTS,
    Climber,
    ClimberEvent,
    EventKind,
    KnobDim,
    KnobSpace,
    Sample,
)
from agents.climber.pooltune import PooltuneClimber, PooltuneConfig, PooltuneState
from agents.climber.reference import ReferenceClimber, ReferenceConfig, ReferenceState
from agents.climber.static import StaticClimber, StaticConfig
from agents.knobs import Engine

ClimberConfig = PooltuneConfig | ReferenceConfig | DotnetConfig | HellersteinConfig | StaticConfig

CLIMBERS: Mapping[str, type[Climber]] = {
    "pooltune": PooltuneClimber,
    "reference": ReferenceClimber,
    "dotnet": DotnetClimber,
    "hellerstein": HellersteinClimber,
    "static": StaticClimber,
}
CONFIGS: Mapping[str, type[ClimberConfig]] = {
    "pooltune": PooltuneConfig,
    "reference": ReferenceConfig,
    "dotnet": DotnetConfig,
    "hellerstein": HellersteinConfig,
    "static": StaticConfig,
}
DEFAULT_CLIMBER = "pooltune"


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


def knob_space_for(
    engine: Engine | str,
    cpu_count: int,
    *,
    bounds: Mapping[str, tuple[int, int]] | None = None,
) -> KnobSpace:
    """The tuned knobs of ``engine`` inside the operator's hard ``bounds``."""
    return KnobSpace.from_engine(engine, cpu_count, bounds=bounds)


__all__ = [
    "CLIMBERS",
    "CONFIGS",
    "DEFAULT_CLIMBER",
    "RESTART_EVENTS",
    "Climber",
    "ClimberConfig",
    "ClimberEvent",
    "DotnetClimber",
    "DotnetConfig",
    "EventKind",
    "HellersteinClimber",
    "HellersteinConfig",
    "KnobDim",
    "KnobSpace",
    "PooltuneClimber",
    "PooltuneConfig",
    "PooltuneState",
    "ReferenceClimber",
    "ReferenceConfig",
    "ReferenceState",
    "Sample",
    "StaticClimber",
    "StaticConfig",
    "knob_space_for",
    "make_climber",
]
