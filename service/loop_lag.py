"""Event-loop lag: how late a serving process's asyncio loop wakes a short timer.

Every request of a worker runs on its one event loop, so a callback that holds the loop
(CPU work in a handler, a blocking call) delays every request due meanwhile. A timer that
should fire every ``interval_s`` and fires later measures that delay for free: the lag is
observed in ``pooltune_event_loop_lag_seconds`` and a lag over the warning threshold is
logged with ``time.monotonic`` (one clock for every process on Linux), so
a stall seen by a client can be matched to its worker. A request that waits on the database
while the loop runs freely shows no lag: the probe tells the two apart (docs/service.md,
"Scale").
"""

from __future__ import annotations

import asyncio
import logging
import os
import time

from prometheus_client import Histogram

logger = logging.getLogger(__name__)

#: The message of the warning; benchmarks/service_load.py finds the lines by it.
BLOCKED = "event loop blocked"


class LoopLagWatch:
    """A task that wakes every ``interval_s`` and records how late it woke."""

    def __init__(self, histogram: Histogram, *, warn_ms: float, interval_s: float = 0.01):
        self.histogram = histogram
        self.warn_s = warn_ms / 1000.0
        self.interval_s = interval_s
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="loop-lag")

    async def stop(self) -> None:
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
            await asyncio.sleep(self.interval_s)
            self.observe(time.monotonic(), due)

    def observe(self, now: float, due: float) -> float:
        """Record a wake-up at ``now`` of a timer ``due`` earlier; returns the lag."""
        lag = max(0.0, now - due)
        self.histogram.observe(lag)
        if self.warn_s > 0 and lag >= self.warn_s:
            logger.warning(
                BLOCKED,
                extra={
                    "lag_ms": round(lag * 1000, 1),
                    "monotonic_s": round(now, 4),
                    "pid": os.getpid(),
                },
            )
        return lag
