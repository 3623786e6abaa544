"""Drive one part of a climb (a generator of measurement requests) against synthetic levels,
without the climber around it: for tests of a single probe or re-test."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Generator, Mapping
from typing import TypeVar

from agents.climber import KnobSpace
from agents.climber.pooltune.evidence import Evidence
from agents.climber.pooltune.line_search import Request
from agents.climber.pooltune.search import Search

T = TypeVar("T")


class Bench:
    """A server whose mean throughput at a tuple and step is ``level``, with Gaussian noise
    of ``cv``, feeding ``evidence``; ``samples`` lists the tuple of every sample taken."""

    def __init__(
        self,
        evidence: Evidence,
        level: Callable[[Mapping[str, int], int], float],
        *,
        cv: float,
        seed: int,
    ) -> None:
        self.evidence = evidence
        self._level = level
        self._cv = cv
        self._rng = random.Random(seed)
        self.samples: list[dict[str, int]] = []

    def measure(self, knobs: Mapping[str, int], count: int) -> None:
        for _ in range(count):
            self.evidence.now += 1
            mean = self._level(knobs, self.evidence.now)
            noisy = mean * (1.0 + self._rng.gauss(0.0, self._cv))
            self.evidence.record(knobs, math.log(noisy), None)
            self.samples.append(dict(knobs))

    def run(self, program: Generator[Request, None, T]) -> T:
        """Answer every request of ``program``; its result."""
        try:
            request = next(program)
            while True:
                self.measure(*request)
                request = program.send(None)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]


def new_search(
    space: KnobSpace, cpu_count: int, evidence: Evidence, start: dict[str, int]
) -> Search:
    """A cold climb from ``start`` whose program is never run: its probes and re-tests are
    driven one at a time."""
    return Search(
        evidence.config,
        space,
        cpu_count,
        evidence,
        lambda kind, reason: None,
        start=start,
        cold=True,
        plausible_range={},
    )


__all__ = ["Bench", "new_search"]
