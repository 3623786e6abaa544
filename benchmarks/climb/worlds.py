"""What a climber runs against in one scenario: a curve (or a replayed real case) with its
noise, and the truth every sample is scored on.

A :class:`World` answers one 2-s observation per call with the noise-free (true) throughput
of the tuple in force and the best throughput of the whole tuple space at that moment, so
the runner scores every family the same way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from agents.climber import Sample
from agents.knobs import Engine
from agents.sim import KneeCurve, NoiseConfig, SimServer, ThroughputCurve, UslCurve
from agents.sim.curves import WorkloadCurve, knee_size, optimum_size
from agents.sim.model import STALL_LIMIT_KNOB
from agents.sim.workloads import random_workload
from benchmarks.climb.curves import CliffCurve, PlateauCurve, StallLimitCurve
from benchmarks.climb.replay import RealCase, Replay, real_cases
from benchmarks.climb.scenarios import REPLAY_FAMILIES, Scenario
from benchmarks.climb.stalls import StallNoise, StallSequence

CORE_CHOICES = (2, 4, 8, 16, 32)


@dataclass(frozen=True, slots=True)
class Observation:
    throughput: float
    connections: int
    latency_ms: float | None
    knobs: dict[str, int]
    cpu_busy: float | None
    stalled: bool | None
    #: Noise-free throughput of the tuple in force, and the best of the tuple space now.
    truth: float
    peak: float
    #: Row-lock waits per statement (None: not modelled).
    lock_waits: float | None = None

    def sample(self) -> Sample:
        """What the climber is shown of this observation (not the truth)."""
        return Sample(
            throughput=self.throughput,
            connections=self.connections,
            latency_ms=self.latency_ms,
            knobs=self.knobs,
            cpu_busy=self.cpu_busy,
            stalled=self.stalled,
            lock_waits=self.lock_waits,
        )


class World(Protocol):
    #: The engine whose knobs the climber tunes, and the operator's bounds on them (None:
    #: the catalog's).
    engine: Engine
    bounds: Mapping[str, tuple[int, int]] | None
    cores: int
    #: The economy reference of plateau curves (smallest size reaching 95% of the best).
    knee: int | None
    #: When the workload changes (index of the first sample after), if it does.
    change_at: int | None

    def observe(self, index: int, knobs: Mapping[str, int]) -> Observation: ...

    def truth(self, knobs: Mapping[str, int]) -> float: ...

    def optimum_size(self) -> int:
        """The best pool size of the (first) curve: what a warm start is placed around."""
        ...

    def secondary_gain_share(self, knobs: Mapping[str, int]) -> float | None:
        """For a curve where a secondary knob matters: the share of its gain ``knobs`` get."""
        ...


def make_curve(family: str, rng: np.random.Generator) -> ThroughputCurve:
    """A curve of the first suite's families (A, B and the simulator's workloads)."""
    cores = int(rng.choice(CORE_CHOICES))
    if family == "A":
        peak_at = math.exp(rng.uniform(math.log(2.0), math.log(80.0)))
        return UslCurve.with_peak_at(
            peak_at,
            serial_fraction=float(rng.uniform(0.0, 0.1)),
            rate=float(rng.uniform(100, 5000)),
            cores=cores,
        )
    if family == "B":
        return KneeCurve(
            rate=float(rng.uniform(100, 5000)),
            knee_size=math.exp(rng.uniform(math.log(1.5), math.log(48.0))),
            sharpness=float(rng.uniform(3.0, 8.0)),
            decline=float(rng.choice([0.0, 0.01, 0.02])),
            cores=cores,
        )
    return WorkloadCurve(random_workload(rng, kind=family, cores=cores))


def _log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(math.exp(rng.uniform(math.log(low), math.log(high))))


def noisy_family_curves(
    family: str, rng: np.random.Generator
) -> tuple[ThroughputCurve, ThroughputCurve | None]:
    """The curve of a new family, and the one it changes to (family "moving")."""
    base_family = str(rng.choice(["A", "B"]))
    if family == "plateau":
        return (
            PlateauCurve(
                rate=float(rng.uniform(100, 5000)),
                knee=_log_uniform(rng, 1.5, 24.0),
                width=_log_uniform(rng, 3.0, 8.0),
                sharpness=float(rng.uniform(1.5, 6.0)),
                fall=_log_uniform(rng, 0.2, 2.0),
                cores=int(rng.choice(CORE_CHOICES)),
            ),
            None,
        )
    if family == "moving":
        cores = int(rng.choice(CORE_CHOICES))
        first_at = _log_uniform(rng, 2.0, 64.0)
        factor = 2.0 ** (rng.uniform(1.0, 3.0) * rng.choice([-1.0, 1.0]))
        second_at = min(100.0, max(2.0, first_at * factor))
        curves = [
            UslCurve.with_peak_at(
                at,
                serial_fraction=float(rng.uniform(0.0, 0.1)),
                rate=float(rng.uniform(100, 5000)),
                cores=cores,
            )
            for at in (first_at, second_at)
        ]
        return curves[0], curves[1]
    base = make_curve(base_family, rng)
    if family == "cliff":
        return CliffCurve.past_twice_the_best(base), None
    if family == "secondary":
        return (
            StallLimitCurve.with_gain(
                base,
                gain=float(rng.uniform(1.4, 2.6)),
                long_ms=float(rng.uniform(600.0, 5000.0)),
                tick_ms=float(rng.uniform(0.2, 1.0)),
            ),
            None,
        )
    return base, None  # "stall", "noeffect": formula curves, real-world noise


class SimWorld:
    """The simulated server running a curve (possibly switching once), with the stall
    overlay for the families that need real-world noise."""

    def __init__(
        self,
        curve: ThroughputCurve,
        *,
        seed: int,
        noise: NoiseConfig,
        second: ThroughputCurve | None = None,
        change_at: int | None = None,
        stalls: StallSequence | None = None,
        economy: bool = False,
    ) -> None:
        self._server = SimServer(curve, seed=seed, noise=noise)
        self._curves = (curve, second)
        self.engine = Engine.MARIADB
        self.bounds: Mapping[str, tuple[int, int]] | None = None
        self.cores = curve.cores
        self.change_at = change_at if second is not None else None
        self._stalls = stalls
        self._peaks = (curve.peak(), second.peak() if second is not None else math.nan)
        self.knee = knee_size(curve) if economy else None

    def _current(self, index: int) -> int:
        return 1 if self.change_at is not None and index >= self.change_at else 0

    def observe(self, index: int, knobs: Mapping[str, int]) -> Observation:
        current = self._current(index)
        if current == 1 and self._server.curve is self._curves[0]:
            second = self._curves[1]
            assert second is not None
            self._server.switch_workload(second)
        sampled = self._server.sample(knobs)
        throughput, stalled = sampled.throughput, None
        if self._stalls is not None:
            factor, stalled = self._stalls.at(index)
            throughput *= factor
        return Observation(
            throughput=throughput,
            connections=sampled.connections,
            latency_ms=sampled.latency_ms,
            knobs=sampled.knobs,
            cpu_busy=None,
            stalled=stalled,
            truth=sampled.expected_throughput,
            peak=self._peaks[current],
        )

    def truth(self, knobs: Mapping[str, int]) -> float:
        return self._server.expected_throughput(knobs)

    def optimum_size(self) -> int:
        return optimum_size(self._curves[0])

    def secondary_gain_share(self, knobs: Mapping[str, int]) -> float | None:
        curve = self._server.curve
        if isinstance(curve, StallLimitCurve):
            return curve.gain_share(float(knobs.get(STALL_LIMIT_KNOB, 500)))
        return None


class ReplayWorld:
    """A real case replayed (see :mod:`benchmarks.climb.replay`); the first sample after a
    change blends the old and the new size, as the server did."""

    def __init__(self, case: RealCase, *, seed: int) -> None:
        self.case = case
        self.engine = case.engine
        # PgBouncer's pool is bounded by PostgreSQL's connections (the Σ rule): here by the
        # largest size the sweep could measure; MariaDB's catalog bound is the engine's own.
        self.bounds: Mapping[str, tuple[int, int]] | None = (
            {case.knob: (1, max(case.sizes))} if case.engine is Engine.PGBOUNCER else None
        )
        self.cores = case.cores
        self.knee: int | None = None
        self.change_at: int | None = None
        self._replay = Replay(case, seed)
        self._previous: dict[str, int] | None = None

    def observe(self, index: int, knobs: Mapping[str, int]) -> Observation:
        throughput, cpu, latency = self._replay.sample(index, knobs)
        stalled = self._replay.stalled(index, knobs)
        if self._previous is not None and self._previous != dict(knobs):
            before, before_cpu, _ = self._replay.sample(index, self._previous)
            throughput, cpu = 0.5 * (throughput + before), 0.5 * (cpu + before_cpu)
            earlier = self._replay.stalled(index, self._previous)
            stalled = None if stalled is None or earlier is None else stalled or earlier
        self._previous = dict(knobs)
        return Observation(
            throughput=throughput,
            connections=self.case.clients,
            latency_ms=latency or None,
            knobs=dict(knobs),
            cpu_busy=cpu,
            stalled=stalled,
            truth=self.truth(knobs),
            peak=self.case.peak(),
            lock_waits=self.case.lock_waits,
        )

    def truth(self, knobs: Mapping[str, int]) -> float:
        return self.case.truth(float(knobs.get(self.case.knob, self.cores)))

    def optimum_size(self) -> int:
        return self.case.sizes[int(np.argmax(self.case.means))]

    def secondary_gain_share(self, knobs: Mapping[str, int]) -> float | None:
        return None


def build_world(scenario: Scenario, rng: np.random.Generator) -> World:
    """The world of ``scenario``; draws its curve from ``rng`` (the scenario's generator)."""
    seed = scenario.seed * 7919 + 17
    if scenario.family in REPLAY_FAMILIES:
        return ReplayWorld(real_cases()[scenario.case], seed=seed)
    noise = NoiseConfig(cv=scenario.cv, drift=0.2, drift_period=900)
    if scenario.family in ("A", "B", "cpu", "io", "lock", "light"):
        curve = make_curve(scenario.family, rng)
        second = make_curve(scenario.family, rng) if scenario.switch else None
        return SimWorld(
            curve,
            seed=seed,
            noise=noise,
            second=second,
            change_at=scenario.samples // 2,
            economy=scenario.family in ("B", "light"),
        )
    curve, second = noisy_family_curves(scenario.family, rng)
    change_at = int(rng.integers(6, 46)) if second is not None else None
    stalls = None
    if scenario.family in ("stall", "noeffect"):
        stalls = StallSequence(StallNoise.draw(rng), scenario.cv, seed + 1)
    return SimWorld(
        curve,
        seed=seed,
        noise=noise,
        second=second,
        change_at=change_at,
        stalls=stalls,
        economy=scenario.family == "plateau",
    )
