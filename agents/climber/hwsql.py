"""HWSQL's signal-processing hill climber, registered as "reference".

The pool size oscillates as a square wave; the first Fourier harmonics of size and
throughput say which way throughput rises (USUAL), a flat curve is walked left (PLATEAU),
the result is held until throughput, connections or latency move (OPTIMIZED). It tunes
the pool size only. States, guards and the choices of this re-implementation:
docs/climber.md ("HWSQL").
"""

from __future__ import annotations

import cmath
import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass

from agents.climber.base import Climber, EventKind, KnobSpace, Sample


@dataclass(frozen=True, slots=True)
class HwsqlConfig:
    """HWSQL's parameters with their reference (72-core) defaults."""

    wave_period: int = 4
    samples_to_wave_period_ratio: int = 8
    ccs_valuable_progress: float = 0.2
    valuable_diff: float = 0.2
    min_wave_magnitude: float = 10.0
    max_wave_magnitude: float = 80.0
    eps: float = 5.0
    min_accepted_throughput: float = 300.0
    guard_excess_threads: float = 20.0
    guard_min_connection_ratio: float = 0.2
    #: A sample below (1 − steep_drop) × the last period's mean is "unnaturally steep".
    steep_drop: float = 0.6
    #: PLATEAU walk stops when a step loses more than this share of the plateau's level.
    plateau_drop: float = 0.05
    curve_misses: int = 2
    reference_cpus: int = 72
    scale_to_host: bool = True


class HwsqlState(enum.StrEnum):
    USUAL = "USUAL"
    PLATEAU = "PLATEAU"
    OPTIMIZED = "OPTIMIZED"
    SUSPENDED = "SUSPENDED"


_SQUARE_WAVE = (1, 1, -1, -1)


def first_harmonic(series: list[float], period: int) -> complex:
    """The DFT coefficient of ``series`` at frequency 1/period."""
    omega = -2j * math.pi / period
    return sum(v * cmath.exp(omega * t) for t, v in enumerate(series)) / max(len(series), 1)


class HwsqlClimber(Climber):
    name = "reference"

    def __init__(self, space: KnobSpace, cpu_count: int, config: HwsqlConfig | None = None) -> None:
        super().__init__(space, cpu_count)
        self.config = cfg = config or HwsqlConfig()
        scale = cpu_count / cfg.reference_cpus if cfg.scale_to_host else 1.0
        size = space.size
        span = size.high - size.low
        self.min_magnitude = max(1, round(cfg.min_wave_magnitude * scale))
        self.max_magnitude = max(
            self.min_magnitude,
            min(max(4 * self.min_magnitude, round(cfg.max_wave_magnitude * scale)), span // 2 or 1),
        )
        self.eps = max(1.0, cfg.eps * scale)
        self.min_throughput = cfg.min_accepted_throughput * scale
        self.excess_threads = max(2.0, cfg.guard_excess_threads * scale)
        self._scale = scale
        self._state = HwsqlState.USUAL
        self._center = size.default
        self._magnitude = self.min_magnitude
        self._history: list[tuple[int, float]] = []
        self._progress = 0.0
        self._left: float | None = None
        self._right: float | None = None
        self._up_strengths: list[float] = []
        self._pairs: dict[int, tuple[float, int]] = {}
        self._misses = 0
        self._period_means: list[float] = []
        self._plateau_level: float | None = None
        self._plateau_previous = 0
        self._hold_reference: tuple[float, float, float | None] | None = None
        self._window: list[Sample] = []
        self._suspended_from = HwsqlState.USUAL
        self._phase = 0

    # ----------------------------------------------------------------- interface
    @property
    def state(self) -> str:
        return self._state.value

    @property
    def converged(self) -> bool:
        return self._state is HwsqlState.OPTIMIZED

    def reset(
        self,
        start: Mapping[str, int],
        *,
        plausible_range: Mapping[str, tuple[int, int]] | None = None,
    ) -> None:
        self._current = self.space.clip(start)
        self._best = dict(self._current)
        self._reinit(self._current[self.space.size.name], reason=None)
        self._phase = -1  # the start sample itself is not part of the wave

    def step(self, sample: Sample) -> dict[str, int]:
        self.steps += 1
        size_name = self.space.size.name
        in_force = sample.knobs.get(size_name, self._current[size_name])
        if in_force != self._current[size_name]:
            self._event(EventKind.MANUAL_CHANGE, f"{size_name} set to {in_force} outside")
            self._current[size_name] = self.space.size.clip(in_force)
            self._reinit(self._current[size_name], reason="manual knob change")
            return self._apply(self._current[size_name])
        if sample.connections <= 0:
            if self._state is not HwsqlState.USUAL or self._history:
                self._reinit(in_force, reason="no connections")
            return self._apply(in_force)
        if sample.throughput < self.min_throughput:
            if self._state is not HwsqlState.SUSPENDED:
                self._suspended_from = self._state
                self._state = HwsqlState.SUSPENDED
                self._event(EventKind.SUSPENDED, "throughput below min_accepted_throughput")
            # Wait at the wave's centre, not at whichever extreme the wave had reached.
            return self._apply(self._center)
        if self._state is HwsqlState.SUSPENDED:
            self._event(EventKind.RESUMED, "throughput is back")
            self._state = self._suspended_from
            self._history.clear()
            self._window.clear()
        if self._steep_drop(sample.throughput):
            self._reinit(in_force, reason="unnaturally steep throughput drop")
            return self._apply(self._center)
        if self._state is not HwsqlState.OPTIMIZED and self._curve_changed(
            in_force, sample.throughput
        ):
            self._reinit(in_force, reason="throughput curve changed (two misses in a row)")
            return self._apply(self._center)
        self._window.append(sample)
        if len(self._window) > self.config.wave_period:
            self._window.pop(0)
        if self._state is HwsqlState.USUAL:
            return self._usual(in_force, sample.throughput)
        if self._state is HwsqlState.PLATEAU:
            return self._plateau(sample.throughput)
        return self._optimized(sample)

    # ----------------------------------------------------------------- states
    def _usual(self, size: int, throughput: float) -> dict[str, int]:
        cfg = self.config
        self._history.append((size, throughput))
        period = cfg.wave_period
        if len(self._history) % period == 0:
            strength = self._trend()
            self._progress += strength
            if abs(self._progress) >= cfg.ccs_valuable_progress:
                self._move(up=self._progress > 0, strength=abs(strength))
            elif len(self._history) >= period * cfg.samples_to_wave_period_ratio:
                if self._magnitude >= self.max_magnitude:
                    self._enter_plateau()
                    return self._apply(self._center)
                self._magnitude = min(self.max_magnitude, 2 * self._magnitude)
                self._history.clear()
                self._progress = 0.0
        if self._state is not HwsqlState.USUAL:
            return self._apply(self._center)
        self._phase += 1
        offset = (
            _SQUARE_WAVE[self._phase % period]
            if period == 4
            else (1 if (self._phase % period) < period / 2 else -1)
        )
        return self._apply(self._center + offset * self._magnitude)

    def _trend(self) -> float:
        period = self.config.wave_period
        sizes = [float(s) for s, _ in self._history]
        rates = [t for _, t in self._history]
        mean_size = sum(sizes) / len(sizes)
        mean_rate = sum(rates) / len(rates)
        c1 = first_harmonic([s / mean_size - 1.0 for s in sizes], period)
        c2 = first_harmonic([r / max(mean_rate, 1e-9) - 1.0 for r in rates], period)
        if abs(c1) < 1e-12 or abs(c2) < 1e-12:
            return 0.0
        # sign(Re(c1/c2)) == sign(Re(c2/c1)); the latter is the dimensionless strength.
        return (c2 / c1).real

    def _move(self, *, up: bool, strength: float) -> None:
        jump = 2.0 * self._magnitude
        center = float(self._center)
        if up:
            self._up_strengths.append(strength)
            self._left = center if self._left is None else max(self._left, center)
            target = center + jump if self._right is None else (center + self._right) / 2.0
        else:
            if self._up_strengths:
                # Scaled jump down: by the strength of this degradation vs earlier rises.
                mean_up = sum(self._up_strengths) / len(self._up_strengths)
                jump *= min(2.0, max(0.5, strength / max(mean_up, 1e-9)))
            self._right = center if self._right is None else min(self._right, center)
            target = center - jump if self._left is None else (center + self._left) / 2.0
        self._history.clear()
        self._progress = 0.0
        bounded = self.space.size.clip(target)
        if (
            self._left is not None
            and self._right is not None
            and self._right - self._left <= self.eps
        ) or bounded == self._center:
            self._center = self.space.size.clip(
                (self._left + self._right) / 2.0
                if self._left is not None and self._right is not None
                else bounded
            )
            self._enter_optimized()
            return
        self._center = bounded

    def _enter_plateau(self) -> None:
        self._state = HwsqlState.PLATEAU
        means = [t for _, t in self._history]
        self._plateau_level = sum(means) / len(means) if means else None
        self._history.clear()
        self._plateau_previous = self._center
        self._walk_left()

    def _walk_left(self) -> None:
        old = self._center
        units = old / max(self._scale, 1e-9)
        new = self.space.size.clip(math.floor(old * (0.5 + 0.36 * math.exp(-0.018 * units))))
        if new >= old:
            self._enter_optimized()
            return
        self._plateau_previous = old
        self._center = new
        self._history.clear()

    def _plateau(self, throughput: float) -> dict[str, int]:
        self._history.append((self._center, throughput))
        if len(self._history) < self.config.wave_period:
            return self._apply(self._center)
        mean = sum(t for _, t in self._history) / len(self._history)
        if self._plateau_level is None:
            self._plateau_level = mean
        if mean >= (1.0 - self.config.plateau_drop) * self._plateau_level:
            self._walk_left()
        else:
            self._center = self._plateau_previous
            self._enter_optimized()
        return self._apply(self._center)

    def _enter_optimized(self) -> None:
        cap = self._connection_cap()
        if cap is not None and self._center > cap:
            self._event(EventKind.GUARD, f"OPTIMIZED at {self._center} > connections guard {cap}")
            self._center = cap
        self._state = HwsqlState.OPTIMIZED
        self._hold_reference = None
        self._history.clear()
        self._window.clear()
        self._best = dict(self._current)
        self._best[self.space.size.name] = self._center
        self._event(EventKind.CONVERGED, f"OPTIMIZED at {self._center}")

    def _optimized(self, sample: Sample) -> dict[str, int]:
        cfg = self.config
        self._history.append((self._center, sample.throughput))
        if len(self._history) < cfg.wave_period:
            return self._apply(self._center)
        window = self._window[-cfg.wave_period :]
        throughput = sum(s.throughput for s in window) / len(window)
        connections = sum(s.connections for s in window) / len(window)
        latencies = [s.latency_ms for s in window if s.latency_ms is not None]
        latency = sum(latencies) / len(latencies) if latencies else None
        self._history.clear()
        if self._hold_reference is None:
            self._hold_reference = (throughput, connections, latency)
            return self._apply(self._center)
        ref_tp, ref_conn, ref_lat = self._hold_reference
        diff = cfg.valuable_diff
        deviated = abs(throughput - ref_tp) > diff * ref_tp or abs(
            connections - ref_conn
        ) > diff * max(ref_conn, 1.0)
        if ref_lat is not None and latency is not None and ref_lat > 0:
            deviated = deviated or abs(latency - ref_lat) > diff * ref_lat
        if deviated:
            self._reinit(
                self._center, reason="OPTIMIZED left: throughput/connections/latency moved"
            )
        return self._apply(self._center)

    # ----------------------------------------------------------------- guards
    def _connection_cap(self) -> int | None:
        if not self._window:
            return None
        connections = self._window[-1].connections
        cap = min(
            connections + self.excess_threads, connections / self.config.guard_min_connection_ratio
        )
        return max(self.space.size.low, int(cap))

    def _steep_drop(self, throughput: float) -> bool:
        window = self._window[-self.config.wave_period :]
        if len(window) < self.config.wave_period:
            return False
        mean = sum(s.throughput for s in window) / len(window)
        return throughput < (1.0 - self.config.steep_drop) * mean

    def _curve_changed(self, size: int, throughput: float) -> bool:
        predicted = self._predict(size)
        total, count = self._pairs.get(size, (0.0, 0))
        self._pairs[size] = (total + throughput, count + 1)
        if predicted is None or predicted <= 0:
            return False
        if abs(throughput - predicted) > self.config.valuable_diff * predicted:
            self._misses += 1
        else:
            self._misses = 0
        return self._misses >= self.config.curve_misses

    def _predict(self, size: int) -> float | None:
        if size in self._pairs:
            total, count = self._pairs[size]
            return total / count
        below = [s for s in self._pairs if s < size]
        above = [s for s in self._pairs if s > size]
        if not below or not above:
            return None
        lo, hi = max(below), min(above)
        lo_value = self._pairs[lo][0] / self._pairs[lo][1]
        hi_value = self._pairs[hi][0] / self._pairs[hi][1]
        return lo_value + (hi_value - lo_value) * (size - lo) / (hi - lo)

    def _reinit(self, center: int, *, reason: str | None) -> None:
        if reason is not None:
            self._event(EventKind.REINIT, reason)
        self._state = HwsqlState.USUAL
        self._center = self.space.size.clip(center)
        self._magnitude = self.min_magnitude
        self._history.clear()
        self._progress = 0.0
        self._left = self._right = None
        self._up_strengths.clear()
        self._pairs.clear()
        self._misses = 0
        self._window.clear()
        self._phase = 0

    def _apply(self, size: float) -> dict[str, int]:
        bounded = self.space.size.clip(size)
        cap = self._connection_cap()
        if cap is not None and bounded > cap:
            bounded = cap  # false-jump guard: no point in more threads than connections
        self._current[self.space.size.name] = bounded
        return dict(self._current)
