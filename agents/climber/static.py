"""The static baseline: the engine's default tuple (or a fixed one), never moved."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from agents.climber.base import Climber, KnobSpace, Sample


@dataclass(frozen=True, slots=True)
class StaticConfig:
    #: The tuple to hold; empty means the engine defaults (size = CPUs on MariaDB).
    fixed: dict[str, int] = field(default_factory=dict)


class StaticClimber(Climber):
    name = "static"

    def __init__(
        self, space: KnobSpace, cpu_count: int, config: StaticConfig | None = None
    ) -> None:
        super().__init__(space, cpu_count)
        self.config = config or StaticConfig()

    def reset(
        self,
        start: Mapping[str, int],
        *,
        plausible_range: Mapping[str, tuple[int, int]] | None = None,
    ) -> None:
        # The baseline ignores the start: it is what an untuned server runs.
        self._current = self.space.clip({**self.space.defaults(), **self.config.fixed})
        self._best = dict(self._current)

    def step(self, sample: Sample) -> dict[str, int]:
        self.steps += 1
        return dict(self._current)

    @property
    def state(self) -> str:
        return "static"

    @property
    def converged(self) -> bool:
        return True
