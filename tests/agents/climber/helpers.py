"""Drive a climber against a simulated server (shared by the climber tests)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from agents.climber import Climber, KnobSpace, Sample, make_climber
from agents.sim import NoiseConfig, SimServer, ThroughputCurve

SIZE = "thread_pool_size"


@dataclass
class Run:
    climber: Climber
    server: SimServer
    sizes: list[int] = field(default_factory=list)
    tuples: list[dict[str, int]] = field(default_factory=list)
    states: list[str] = field(default_factory=list)
    expected: list[float] = field(default_factory=list)


def size_space(cpu_count: int) -> KnobSpace:
    return KnobSpace.from_engine("mariadb", cpu_count, names=[SIZE])


def drive(
    climber: Climber,
    curve: ThroughputCurve,
    *,
    start: dict[str, int],
    samples: int,
    noise: NoiseConfig | None = None,
    seed: int = 0,
    plausible_range: dict[str, tuple[int, int]] | None = None,
    hook: Callable[[int, SimServer], None] | None = None,
    sample_filter: Callable[[int, Sample], Sample] | None = None,
) -> Run:
    server = SimServer(curve, seed=seed, noise=noise or NoiseConfig.quiet())
    climber.reset(start, plausible_range=plausible_range)
    knobs = climber.current_tuple
    run = Run(climber, server)
    for index in range(samples):
        if hook is not None:
            hook(index, server)
        sampled = server.sample(knobs)
        run.sizes.append(knobs[climber.space.size.name])
        run.tuples.append(dict(knobs))
        run.expected.append(sampled.expected_throughput)
        sample = Sample(sampled.throughput, sampled.connections, sampled.latency_ms, sampled.knobs)
        if sample_filter is not None:
            sample = sample_filter(index, sample)
        knobs = climber.step(sample)
        run.states.append(climber.state)
    return run


def new(name: str, cpu_count: int, space: KnobSpace | None = None, **config: object) -> Climber:
    from agents.climber import CONFIGS

    cfg = CONFIGS[name](**config) if config else None  # type: ignore[arg-type]
    return make_climber(
        name, knob_space=space or size_space(cpu_count), cpu_count=cpu_count, config=cfg
    )


@dataclass(frozen=True)
class MeasuredCurve:
    """A curve read off a live sweep on the 2-core server, interpolated in log size."""

    connections: int
    sizes: tuple[int, ...]
    shares: tuple[float, ...]
    max_size: int = 128
    cores: int = 2
    #: The pool size's knob (MariaDB's unless told: PgBouncer's ``default_pool_size``).
    knob: str = SIZE

    def expected(self, knobs: Mapping[str, int]) -> tuple[float, float]:
        throughput = float(self.curve(np.asarray([float(knobs.get(self.knob, 2))]))[0])
        return throughput, 1000.0 * self.connections / throughput

    def curve(self, sizes: np.ndarray | None = None) -> np.ndarray:
        grid = np.arange(1, self.max_size + 1, dtype=float) if sizes is None else sizes
        shares = np.interp(np.log(grid), np.log(self.sizes), self.shares)
        return np.asarray(400.0 * shares)

    def peak(self) -> float:
        return 400.0
