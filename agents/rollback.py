"""The loop's backstop against a sharp loss: the recent throughput at each tuple, and the
rule that sends the server back to the last good tuple after a sustained drop."""

from __future__ import annotations

import logging
import statistics
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)

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

    def due(
        self,
        throughput: float,
        good: Mapping[str, int],
        good_levels: Sequence[float],
        *,
        below: float,
        samples: int,
    ) -> bool:
        """Whether a rollback to ``good`` is due now: ``samples`` in a row below ``below`` ×
        the median of ``good_levels`` (empty when the server is at the good tuple or the
        good tuple is unmeasured). Says why in the log."""
        if not good_levels:
            self.low_samples = 0
            return False
        reference = statistics.median(good_levels)
        if throughput >= below * reference:
            self.low_samples = 0
            return False
        self.low_samples += 1
        if self.low_samples < samples:
            return False
        self.low_samples = 0
        logger.warning(
            "throughput %.0f below %.0f%% of the last good tuple's %.0f for %d samples: "
            "rolling back to %s",
            throughput,
            100 * below,
            reference,
            samples,
            dict(good),
        )
        return True
