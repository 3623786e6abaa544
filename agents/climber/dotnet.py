"""The .NET thread pool's hill climbing, re-implemented from its source, for the benchmark.

A one-sided square wave on the thread count, Goertzel harmonics, a signal-to-noise
confidence and a bias below the peak; pool size only, never restarts. Details:
docs/climber.md (".NET hill climbing").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from agents.climber.base import Climber, KnobSpace, Sample


def goertzel(samples: list[float], period: float) -> complex:
    """The .NET ``GetWaveComponent``: the Goertzel harmonic at 1/period, per sample."""
    omega = 2.0 * math.pi / period
    cosine, sine = math.cos(omega), math.sin(omega)
    coefficient = 2.0 * cosine
    q1 = q2 = 0.0
    for value in samples:
        q0 = coefficient * q1 - q2 + value
        q2, q1 = q1, q0
    return complex(q1 - q2 * cosine, q2 * sine) / max(len(samples), 1)


@dataclass(frozen=True, slots=True)
class DotnetConfig:
    wave_period: int = 4
    max_thread_wave_magnitude: int = 20
    thread_magnitude_multiplier: float = 1.0
    samples_to_measure: int = 32
    target_throughput_ratio: float = 0.15
    target_signal_to_noise_ratio: float = 3.0
    max_change_per_second: float = 4.0
    max_change_per_sample: float = 20.0
    sample_seconds: float = 2.0
    throughput_error_smoothing_factor: float = 0.01
    gain_exponent: float = 2.0


class DotnetClimber(Climber):
    name = "dotnet"

    def __init__(
        self, space: KnobSpace, cpu_count: int, config: DotnetConfig | None = None
    ) -> None:
        super().__init__(space, cpu_count)
        self.config = config or DotnetConfig()
        self._samples: list[float] = []
        self._threads: list[float] = []
        self._total = 0
        self._control = float(space.size.default)
        self._noise = 0.0
        self._moves: list[float] = []

    @property
    def state(self) -> str:
        return "climbing"

    @property
    def converged(self) -> bool:
        # .NET never stops; call it converged once its last 8 moves were all tiny.
        return len(self._moves) >= 8 and all(abs(m) < 0.5 for m in self._moves[-8:])

    def reset(
        self,
        start: Mapping[str, int],
        *,
        plausible_range: Mapping[str, tuple[int, int]] | None = None,
    ) -> None:
        self._current = self.space.clip(start)
        self._control = float(self._current[self.space.size.name])
        self._samples.clear()
        self._threads.clear()
        self._total = 0
        self._noise = 0.0

    def step(self, sample: Sample) -> dict[str, int]:
        cfg = self.config
        self.steps += 1
        size = self.space.size
        current = sample.knobs.get(size.name, self._current[size.name])
        self._total += 1
        self._samples.append(sample.throughput)
        self._threads.append(float(current))
        self._samples = self._samples[-cfg.samples_to_measure :]
        self._threads = self._threads[-cfg.samples_to_measure :]
        count = min(self._total - 1, cfg.samples_to_measure) // cfg.wave_period * cfg.wave_period
        move = 0.0
        if count > cfg.wave_period:
            rates = self._samples[-count:]
            threads = self._threads[-count:]
            mean_rate = sum(rates) / count
            mean_threads = sum(threads) / count
            if mean_rate > 0 and mean_threads > 0:
                periods = count / cfg.wave_period
                adjacent_1 = count / (periods + 1)
                adjacent_2 = count / (periods - 1)
                throughput_wave = goertzel(rates, cfg.wave_period) / mean_rate
                error = abs(goertzel(rates, adjacent_1) / mean_rate)
                if adjacent_2 <= count:
                    error = max(error, abs(goertzel(rates, adjacent_2) / mean_rate))
                thread_wave = goertzel(threads, cfg.wave_period) / mean_threads
                if self._noise == 0.0:
                    self._noise = error
                else:
                    a = cfg.throughput_error_smoothing_factor
                    self._noise = a * error + (1 - a) * self._noise
                ratio = 0j
                confidence = 0.0
                if abs(thread_wave) > 0:
                    ratio = (
                        throughput_wave - cfg.target_throughput_ratio * thread_wave
                    ) / thread_wave
                    noise = max(self._noise, error)
                    confidence = (
                        abs(thread_wave) / noise / cfg.target_signal_to_noise_ratio
                        if noise > 0
                        else 1.0
                    )
                move = min(1.0, max(-1.0, ratio.real))
                move *= min(1.0, max(0.0, confidence))
                gain = cfg.max_change_per_second * cfg.sample_seconds
                move = math.copysign(abs(move) ** cfg.gain_exponent, move) * gain
                move = min(move, cfg.max_change_per_sample)
        self._moves.append(move)
        self._moves = self._moves[-16:]
        self._control += move
        magnitude = int(0.5 + self._control * self._noise * cfg.thread_magnitude_multiplier * 2.0)
        magnitude = max(1, min(magnitude, cfg.max_thread_wave_magnitude))
        self._control = min(float(size.high - magnitude), self._control)
        self._control = max(float(size.low), self._control)
        new_count = int(self._control + magnitude * ((self._total // (cfg.wave_period // 2)) % 2))
        self._current[size.name] = size.clip(new_count)
        self._best = dict(self._current)
        self._best[size.name] = size.clip(self._control)
        return dict(self._current)
