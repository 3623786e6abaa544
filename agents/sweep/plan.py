"""What a sweep measures: the knob, its grid, the dwell per visit and the interleaved order.

The grid is visited ``repeats`` times in interleaved order so that a slow drift spreads
over every value instead of aliasing onto the grid (see docs/agent.md, "The sweep"). A
paired sweep also visits a reference value before and after every visit of the grid, so
each value is measured side by side with the reference (docs/agent.md, "The sweep").
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from agents.profile import ThroughputMetric

VisitOrder = Literal["balanced", "shuffle"]

#: Default grids per knob (MariaDB / Percona): log-spaced, around the defaults.
DEFAULT_GRIDS: Mapping[str, tuple[int, ...]] = {
    "thread_pool_size": (1, 2, 3, 4, 6, 8, 12, 16, 32, 64),
    "thread_pool_oversubscribe": (1, 2, 3, 5, 10, 30),
    "thread_pool_stall_limit": (10, 50, 100, 500, 2000),
    "default_pool_size": (1, 2, 4, 8, 16, 32, 64, 128),
}


class SweepError(Exception):
    """A sweep cannot start or cannot go on; the message says why."""


class SweepInterrupted(SweepError):
    """The stop event was set (SIGINT / SIGTERM); the original tuple has been restored."""


@dataclass(frozen=True, slots=True)
class SweepPlan:
    """What to measure and how long."""

    knob: str
    values: tuple[int, ...]
    dwell_s: float = 6.0
    repeats: int = 3
    sample_period_s: float = 2.0
    #: Samples dropped after each change (actuation lag).
    discard_samples: int = 1
    metric: ThroughputMetric = "transactions"
    order: VisitOrder = "balanced"
    seed: int = 0
    #: Seconds of observation at the original tuple before the first change; the profile
    #: measured there is what an agent would see before it starts (0: none).
    baseline_s: float = 0.0
    #: Processes whose CPU counts as the measured load (e.g. the load generator), so
    #: that the rest of the host's CPU use is attributed to "other" processes.
    load_pids: tuple[int, ...] = ()
    #: A paired sweep: this value is visited before every visit of the grid and once at
    #: the end, so each other value's visit is bracketed by two of its visits and can be
    #: read as a ratio to it, whatever the server's level did meanwhile (None: plain).
    reference: int | None = None

    def __post_init__(self) -> None:
        if not self.values:
            raise SweepError("the grid is empty")
        if len(set(self.values)) != len(self.values):
            raise SweepError(f"the grid has duplicate values: {list(self.values)}")
        if self.repeats < 1:
            raise SweepError("repeats must be at least 1")
        if self.sample_period_s <= 0 or self.dwell_s <= 0:
            raise SweepError("dwell and sample period must be positive")
        if self.reference is not None and (
            self.reference not in self.values or len(self.values) < 2
        ):
            raise SweepError(
                f"the reference {self.reference} of a paired sweep must be one of at least "
                f"two values: {list(self.values)}"
            )
        if self.samples_per_visit <= self.discard_samples:
            raise SweepError(
                f"a dwell of {self.dwell_s:g}s gives {self.samples_per_visit} sample(s) of "
                f"{self.sample_period_s:g}s, none left after discarding "
                f"{self.discard_samples}: use a longer --dwell"
            )

    @property
    def samples_per_visit(self) -> int:
        return max(1, round(self.dwell_s / self.sample_period_s))

    @property
    def visits(self) -> list[tuple[int, int]]:
        """(repeat, value) in measuring order; a paired sweep puts the reference before
        every other value and once at the end (the reference's own repeats are those)."""
        if self.reference is None:
            return [
                (repeat, value)
                for repeat, values in enumerate(
                    visit_order(self.values, self.repeats, self.order, seed=self.seed)
                )
                for value in values
            ]
        others = [v for v in self.values if v != self.reference]
        order: list[tuple[int, int]] = []
        for repeat, values in enumerate(
            visit_order(others, self.repeats, self.order, seed=self.seed)
        ):
            for value in values:
                order += [(repeat, self.reference), (repeat, value)]
        return [*order, (self.repeats - 1, self.reference)]

    @property
    def expected_duration_s(self) -> float:
        per_visit = self.samples_per_visit * self.sample_period_s
        return self.baseline_s + per_visit * len(self.visits)


def visit_order(
    values: Sequence[int], repeats: int, order: VisitOrder = "balanced", *, seed: int = 0
) -> list[list[int]]:
    """The grid once per repeat, interleaved so that drift does not alias onto the grid.

    ``balanced``: repeat 0 in grid order; every later repeat visits first the values that
    have so far been measured latest on average (ties alternately ascending and
    descending), so repeat 1 is the reverse of repeat 0 (A/B/B/A) and a linear drift
    adds about the same to every value. ``shuffle``: a seeded permutation per repeat.
    In both, a repeat never starts with the value the previous one ended on (that would
    be one long visit, not two), when the grid has more than one value.
    """
    grid = list(values)
    count = len(grid)
    rng = random.Random(seed)
    position_sum = dict.fromkeys(grid, 0)
    passes: list[list[int]] = []
    for repeat in range(repeats):
        if order == "shuffle":
            current = grid[:]
            rng.shuffle(current)
        else:
            ties = grid if repeat % 2 == 0 else grid[::-1]
            rank = {value: index for index, value in enumerate(ties)}
            current = sorted(grid, key=lambda v: (-position_sum[v], rank[v]))
        if passes and count > 1 and current[0] == passes[-1][-1]:
            current[0], current[1] = current[1], current[0]
        for index, value in enumerate(current):
            position_sum[value] += repeat * count + index
        passes.append(current)
    return passes
