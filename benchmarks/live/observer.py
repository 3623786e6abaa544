"""An observer independent of the agent: the server's throughput every ``SAMPLE_S`` seconds
through a target of its own, the pool size in force, and the CPU other processes took
meanwhile."""

from __future__ import annotations

import time

from agents.hostcpu import host_busy_seconds, processes_cpu_seconds
from agents.profile import ProfileError, ThroughputMetric
from agents.profilers import target_profiler
from agents.targets.base import Target
from benchmarks.live.cases import SAMPLE_S


class Observer:
    """Samples throughput (per ``metric``) from ``target``'s counters; ``knob`` is the pool
    size knob it reports (and the oracle sweeps)."""

    def __init__(
        self,
        target: Target,
        *,
        knob: str,
        metric: ThroughputMetric = "transactions",
        load_pids: tuple[int, ...] = (),
    ) -> None:
        self.target = target
        self.knob = knob
        self.metric: ThroughputMetric = metric
        self.load_pids = load_pids
        self.profiler = target_profiler(target)
        self.target.connect()
        self.target.check(read_only=True)
        #: CPU cores used by other processes than the server and the load, per sample:
        #: the machine is shared, and samples taken while something else is busy lie.
        self.foreign_cores: list[float] = []
        self._last = self.target.read_counters()
        self._last_cpu = self._cpu()

    def _cpu(self) -> tuple[float | None, float]:
        """(busy CPU seconds of the host, CPU seconds of the load generators)."""
        return host_busy_seconds(), processes_cpu_seconds(self.load_pids) or 0.0

    def sample(self) -> float:
        """Throughput since the previous sample (0 when the interval cannot be measured)."""
        current = self.target.read_counters()
        previous, self._last = self._last, current
        cpu = self._cpu()
        (host_before, load_before), self._last_cpu = self._last_cpu, cpu
        try:
            rates = self.profiler.interval(previous, current)
        except ProfileError:
            return 0.0
        if cpu[0] is not None and host_before is not None:
            foreign = (cpu[0] - host_before) - (cpu[1] - load_before)
            foreign -= (rates.cpu_busy or 0.0) * rates.duration_s
            self.foreign_cores.append(max(0.0, foreign) / rates.duration_s)
        return rates.throughput(self.metric)

    def size(self) -> int:
        return self.target.current_tuple([self.knob])[self.knob]

    def set_size(self, size: int) -> None:
        self.target.apply({self.knob: size})

    def hold(
        self, seconds: float, sizes: list[int] | None = None, times: list[float] | None = None
    ) -> list[float]:
        """Samples for ``seconds``; with ``sizes``, the pool size in force at each one too;
        with ``times``, the wall-clock time (epoch seconds) each sample ended, so that
        what the server logged can be placed on the series."""
        samples: list[float] = []
        self.sample()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            time.sleep(SAMPLE_S)
            samples.append(self.sample())
            if times is not None:
                times.append(time.time())
            if sizes is not None:
                sizes.append(self.size())
        return samples

    def close(self) -> None:
        self.target.close()
