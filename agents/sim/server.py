"""A simulated thread-pool server: the steady-state curve plus realistic sampling noise."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from agents.sim.curves import (
    KNEE_SHARE,
    OPTIMUM_SHARE,
    ThroughputCurve,
    WorkloadCurve,
    knee_size,
    optimum_size,
)
from agents.sim.model import (
    DEFAULT_OVERSUBSCRIBE,
    DEFAULT_STALL_LIMIT_MS,
    OVERSUBSCRIBE_GRID,
    OVERSUBSCRIBE_KNOB,
    SIZE_KNOB,
    STALL_LIMIT_GRID,
    STALL_LIMIT_KNOB,
    SimWorkload,
)
from agents.sim.noise import NoiseConfig, NoiseSequence
from agents.wire import WorkloadProfile

#: Seconds per sample (the reference design's ``hcm_period``).
SAMPLE_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class SimSample:
    """One 2-second sample as an agent would read it, plus the truth for scoring."""

    index: int
    throughput: float
    latency_ms: float
    connections: int
    knobs: dict[str, int]
    #: Noise-free steady-state throughput of ``knobs`` (never shown to a climber).
    expected_throughput: float


class SimServer:
    """A server running one workload at a time; each :meth:`sample` is the next 2 s.

    Noise is a function of the sample index (see :mod:`agents.sim.noise`). The first
    sample after a knob change blends the old and the new steady state half and half,
    as MariaDB moves each connection to its new group only at its next I/O.
    """

    def __init__(
        self,
        curve: ThroughputCurve | SimWorkload,
        *,
        seed: int,
        noise: NoiseConfig | None = None,
    ) -> None:
        self._curve = as_curve(curve)
        self._noise_config = noise or NoiseConfig()
        self._noise = NoiseSequence(self._noise_config, seed)
        self._index = 0
        self._previous: dict[str, int] | None = None

    @property
    def curve(self) -> ThroughputCurve:
        return self._curve

    @property
    def samples_taken(self) -> int:
        return self._index

    def switch_workload(self, curve: ThroughputCurve | SimWorkload) -> None:
        """From the next sample on, the server runs another workload."""
        self._curve = as_curve(curve)

    def expected_throughput(self, knobs: Mapping[str, int]) -> float:
        return self._curve.expected(knobs)[0]

    def sample(self, knobs: Mapping[str, int]) -> SimSample:
        in_force = dict(knobs)
        throughput, latency = self._curve.expected(in_force)
        observed = throughput
        if self._noise_config.lag and self._previous is not None and self._previous != in_force:
            observed = 0.5 * (throughput + self._curve.expected(self._previous)[0])
        factor = self._noise.factor(self._index)
        observed *= factor
        latency_observed = latency * throughput / max(observed, 1e-9)
        sample = SimSample(
            index=self._index,
            throughput=observed,
            latency_ms=latency_observed,
            connections=self._curve.connections,
            knobs=in_force,
            expected_throughput=throughput,
        )
        self._index += 1
        self._previous = in_force
        return sample

    # ------------------------------------------------------------------ scoring
    def optimum(self) -> dict[str, int]:
        """The economical optimal tuple: the smallest size within 1% of the best size,
        with the oversubscribe / stall limit that are best at that size."""
        size = optimum_size(self._curve, OPTIMUM_SHARE)
        best = {SIZE_KNOB: size, OVERSUBSCRIBE_KNOB: DEFAULT_OVERSUBSCRIBE}
        best[STALL_LIMIT_KNOB] = DEFAULT_STALL_LIMIT_MS
        if isinstance(self._curve, WorkloadCurve):
            w = self._curve.workload
            over = np.asarray(OVERSUBSCRIBE_GRID, dtype=np.float64)
            stall = np.asarray(STALL_LIMIT_GRID, dtype=np.float64)
            at_size, _ = w.steady_state(float(size), over[:, None], stall[None, :])
            i, j = np.unravel_index(int(np.argmax(at_size)), at_size.shape)
            default_value = self._curve.expected(best)[0]
            # Keep the defaults unless another pair is clearly (> 1%) better.
            if float(at_size[i, j]) > 1.01 * default_value:
                best[OVERSUBSCRIBE_KNOB] = int(over[i])
                best[STALL_LIMIT_KNOB] = int(stall[j])
        return best

    def knee(self) -> int:
        """The smallest pool size reaching 95% of the best size's throughput."""
        return knee_size(self._curve, KNEE_SHARE)

    def peak(self) -> float:
        return self._curve.peak()

    def measured_profile(
        self,
        rng: np.random.Generator,
        *,
        knobs: Mapping[str, int] | None = None,
        window_s: float = 60.0,
        measurement_cv: float = 0.1,
    ) -> WorkloadProfile:
        """The workload profile an agent would measure over ``window_s`` at ``knobs``
        (default: the tuple last sampled, else the engine defaults), with measurement
        noise of ``measurement_cv`` on every measured quantity.

        Units are the agent's (:mod:`agents.profile`): a request is a *statement* (one round
        of a simulated transaction), so latency, CPU time, wait and think time are per
        statement. The latency is execution time, as the server's ``query_response_time``
        histogram times it (the time queued in the pool is not in it), and the wait W is
        latency minus CPU time, as the agent computes it.
        """
        if knobs is None:
            knobs = self._previous or {SIZE_KNOB: self._curve.cores}

        def noisy(value: float) -> float:
            return max(0.0, value * float(rng.lognormal(0.0, measurement_cv)))

        throughput, latency = self._curve.expected(knobs)
        connections = self._curve.connections
        if isinstance(self._curve, WorkloadCurve):
            w = self._curve.workload
            _, executing, queued = w.occupancy(knobs)
            statements_per_s = throughput * w.rounds
            # Per statement: the transaction's executing time spread over its rounds.
            executing_ms = 1000.0 * executing / max(statements_per_s, 1e-12)
            return WorkloadProfile(
                window_s=window_s,
                connections=connections,
                active_connections=min(noisy(executing + queued), float(connections)),
                qps=noisy(statements_per_s),
                tps=noisy(throughput),
                read_fraction=1.0 - w.write_fraction,
                latency_ms=noisy(executing_ms),
                cpu_ms_per_request=noisy(w.cpu_ms),
                wait_ms_per_request=noisy(max(0.0, executing_ms - w.cpu_ms)),
                rounds_per_request=w.rounds,
                think_ms=noisy(w.think_ms / w.rounds),
                lock_waits_per_s=noisy(statements_per_s * w.lock_conflict),
                thread_create_ms=noisy(w.thread_create_ms),
                sync_ms_per_request=noisy(w.sync_ms_per_round(knobs)),
            )
        return WorkloadProfile(
            window_s=window_s,
            connections=connections,
            active_connections=float(connections),
            qps=noisy(throughput),
            tps=noisy(throughput),
            latency_ms=noisy(latency),
        )


def as_curve(curve: ThroughputCurve | SimWorkload) -> ThroughputCurve:
    if isinstance(curve, SimWorkload):
        return WorkloadCurve(curve)
    return curve
