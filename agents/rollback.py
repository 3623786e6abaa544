"""The loop's backstop against a sharp loss: the recent throughput at each tuple, and the
rule that sends the server back to the last good tuple after a sustained drop."""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

#: Throughputs kept per tuple (the most recent ones).
LEVELS_KEPT = 5


def _key(values: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(values.items()))


@dataclass(slots=True)
class ThroughputLevels:
    """The last :data:`LEVELS_KEPT` throughputs measured at each tuple."""

    _levels: dict[tuple[tuple[str, int], ...], deque[float]] = field(default_factory=dict)

    def add(self, knobs: Mapping[str, int], throughput: float) -> None:
        self._levels.setdefault(_key(knobs), deque(maxlen=LEVELS_KEPT)).append(throughput)

    def at(self, knobs: Mapping[str, int]) -> Sequence[float]:
        return tuple(self._levels.get(_key(knobs), ()))

    def clear(self) -> None:
        self._levels.clear()


@dataclass(slots=True)
class RollbackGuard:
    """Counts the samples in a row below a share of the good tuple's median level."""

    low_samples: int = 0

    def check(
        self, throughput: float, good_levels: Sequence[float], *, below: float, samples: int
    ) -> float | None:
        """The good tuple's reference level when a rollback is due now (``samples`` in a
        row below ``below`` × that level), else None. ``good_levels`` is empty when the
        server is at the good tuple or the good tuple is unmeasured."""
        if not good_levels:
            self.low_samples = 0
            return None
        reference = statistics.median(good_levels)
        if throughput >= below * reference:
            self.low_samples = 0
            return None
        self.low_samples += 1
        if self.low_samples < samples:
            return None
        self.low_samples = 0
        return reference
