"""Event-loop lag: how late a serving process's asyncio loop wakes a short timer, and how
much of it the garbage collector took.

Every request of a worker runs on its one event loop, so a callback that holds the loop
(CPU work in a handler, a blocking call) delays every request due meanwhile. A timer that
should fire every ``interval_s`` and fires later measures that delay for free: the lag is
observed in ``pooltune_event_loop_lag_seconds``, and a lag over the warning threshold is
logged with ``time.monotonic`` (one clock for every process on Linux), so a stall seen by a
client can be matched to its worker, and with how long the collector ran meanwhile
(``gc_ms``) and its oldest generation. A request that waits on the database while the loop
runs freely shows no lag: the probe tells the two apart (docs/service.md, "Scale").
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import time

from prometheus_client import Histogram

logger = logging.getLogger(__name__)

#: The message of the warning; benchmarks/service_load.py finds the lines by it.
BLOCKED = "event loop blocked"


class GcClock:
    """Time spent in garbage collections of this process, and the oldest generation
    collected, summed from ``gc.callbacks`` since the last :meth:`take`."""

    def __init__(self) -> None:
        self._started: float | None = None
        self.seconds = 0.0
        self.generation = -1

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        elif self._started is not None:
            self.seconds += time.perf_counter() - self._started
            self.generation = max(self.generation, info.get("generation", -1))
            self._started = None

    def take(self) -> tuple[float, int]:
        """(seconds, oldest generation or -1) since the last call; starts a new count."""
        taken = (self.seconds, self.generation)
        self.seconds, self.generation = 0.0, -1
        return taken


class LoopLagWatch:
    """A task that wakes every ``interval_s`` and records how late it woke."""

    def __init__(self, histogram: Histogram, *, warn_ms: float, interval_s: float = 0.01):
        self.histogram = histogram
        self.warn_s = warn_ms / 1000.0
        self.interval_s = interval_s
        self.gc_clock = GcClock()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        gc.callbacks.append(self.gc_clock)
        self._task = asyncio.get_running_loop().create_task(self._run(), name="loop-lag")

    async def stop(self) -> None:
        if self.gc_clock in gc.callbacks:
            gc.callbacks.remove(self.gc_clock)
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    async def _run(self) -> None:
        while True:
            due = time.monotonic() + self.interval_s
            self.gc_clock.take()
            await asyncio.sleep(self.interval_s)
            self.observe(time.monotonic(), due)

    def observe(self, now: float, due: float) -> float:
        """Record a wake-up at ``now`` of a timer ``due`` earlier; returns the lag."""
        lag = max(0.0, now - due)
        self.histogram.observe(lag)
        if self.warn_s > 0 and lag >= self.warn_s:
            gc_s, generation = self.gc_clock.take()
            logger.warning(
                BLOCKED,
                extra={
                    "lag_ms": round(lag * 1000, 1),
                    "monotonic_s": round(now, 4),
                    "pid": os.getpid(),
                    "gc_ms": round(gc_s * 1000, 1),
                    "gc_generation": generation,
                },
            )
        return lag
