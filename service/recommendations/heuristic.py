"""The fallback: pool size = cores × (1 + W/S), clipped to the catalog and the connections."""

from __future__ import annotations

import math

from agents.knobs import POOL_SIZE_KNOB, Knob, catalog, tuned_knobs
from agents.wire import HostFacts, WorkloadProfile
from service.recommendations.model_format import Prediction

#: Beyond this W/S the formula asks for more threads than any catalog allows anyway.
MAX_BLOCKING_COEFFICIENT = 1000.0


def blocking_coefficient(profile: WorkloadProfile) -> float:
    """W/S from the profile; from latency − CPU time when W is unknown; 0 when nothing is."""
    known = profile.blocking_coefficient
    if known is None and profile.latency_ms is not None and profile.cpu_ms_per_request:
        known = max(0.0, profile.latency_ms - profile.cpu_ms_per_request) / (
            profile.cpu_ms_per_request
        )
    if known is None or not math.isfinite(known):
        return 0.0
    return min(known, MAX_BLOCKING_COEFFICIENT)


def _around(knob: Knob, value: int, low: float, high: float) -> tuple[int, int]:
    return min(value, knob.clip(low)), max(value, knob.clip(high))


def heuristic_recommendation(host: HostFacts, profile: WorkloadProfile) -> Prediction:
    """Start tuple and ranges for every tuned knob of the host's engine."""
    engine = host.engine
    knobs = catalog(engine)
    size_knob = knobs[POOL_SIZE_KNOB[engine]]
    ceiling = size_knob.maximum
    if profile.connections > 0:
        # More workers than connections cannot help.
        ceiling = max(size_knob.minimum, min(ceiling, profile.connections))
    raw_size = host.cpu_count * (1.0 + blocking_coefficient(profile))
    size = int(min(ceiling, max(size_knob.minimum, round(raw_size))))
    values = {size_knob.name: size}
    ranges = {
        size_knob.name: (
            min(size, size_knob.clip(size / 2)),
            max(size, min(ceiling, size_knob.clip(size * 2))),
        )
    }
    for knob in tuned_knobs(engine):
        if knob.name == size_knob.name:
            continue
        default = knob.default_for(host.cpu_count)
        values[knob.name] = default
        ranges[knob.name] = _around(knob, default, default / 2, max(default * 2, default + 4))
    return values, ranges
