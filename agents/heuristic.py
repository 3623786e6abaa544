"""The fallback starting tuple: the pool-size rule of thumb, clipped to what makes sense.

``size = cores × (1 + W/S)``, no larger than the pool open when the host's CPUs were
saturated, clipped to the knob's bounds and to the connections; the other tuned knobs keep
the engine defaults; the plausible range is a factor of two either side. The one
implementation: the service, the agent (offline) and the trainer's baseline call it, so all
three agree. Details: docs/agent.md, "The start tuple".
"""

from __future__ import annotations

import math

from agents import knobs
from agents.wire import HostFacts, KnobRange, KnobTuple, WorkloadProfile
from agents.wire.workload import HOST_CPU_BUSY_EXTRA, POOL_CONNECTIONS_EXTRA

#: How far either side of the heuristic's answer the optimum plausibly lies (a factor).
RANGE_FACTOR = 2.0
#: Beyond this W/S the formula asks for more threads than any catalog allows anyway.
MAX_BLOCKING_COEFFICIENT = 1000.0

#: The host's CPUs count as saturated from this share of them busy on.
SATURATED_CPU_SHARE = 0.9

#: Start tuple and an inclusive (low, high) range per knob.
Prediction = tuple[dict[str, int], dict[str, tuple[int, int]]]


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


def saturated_pool_ceiling(cpu_count: int, profile: WorkloadProfile) -> float | None:
    """The pool connections open when the profile was taken if the host's CPUs were
    saturated then, else None. A connection's held time is then mostly waiting for a CPU
    and grows with the pool itself, so W/S asks for more of what the CPUs cannot serve; a
    wider pool only lengthens the run queue (docs/agent.md, "The start tuple")."""
    busy = profile.extras.get(HOST_CPU_BUSY_EXTRA)
    pool = profile.extras.get(POOL_CONNECTIONS_EXTRA)
    if busy is None or pool is None or pool < 1.0 or busy < SATURATED_CPU_SHARE * cpu_count:
        return None
    return pool


def theory_pool_size(cpu_count: int, blocking: float, profile: WorkloadProfile) -> float:
    """cores × (1 + ``blocking``), no larger than :func:`saturated_pool_ceiling`: the size
    queueing theory gives, unclipped (the heuristic and the model's size offset share it)."""
    size = cpu_count * (1.0 + blocking)
    ceiling = saturated_pool_ceiling(cpu_count, profile)
    return size if ceiling is None else min(size, ceiling)


def _size_ceiling(host: HostFacts, profile: WorkloadProfile) -> int:
    size_knob = knobs.knob(host.engine, knobs.POOL_SIZE_KNOB[host.engine])
    return knobs.pool_size_ceiling(profile.connections, size_knob.minimum, size_knob.maximum)


def heuristic_pool_size(host: HostFacts, profile: WorkloadProfile) -> int:
    size_knob = knobs.knob(host.engine, knobs.POOL_SIZE_KNOB[host.engine])
    raw_size = theory_pool_size(host.cpu_count, blocking_coefficient(profile), profile)
    return int(min(_size_ceiling(host, profile), size_knob.clip(raw_size)))


def heuristic_prediction(host: HostFacts, profile: WorkloadProfile) -> Prediction:
    """Start value and (low, high) range for every tuned knob of the host's engine."""
    size_name = knobs.POOL_SIZE_KNOB[host.engine]
    ceiling = _size_ceiling(host, profile)
    values: dict[str, int] = {}
    ranges: dict[str, tuple[int, int]] = {}
    for knob in knobs.tuned_knobs(host.engine):
        if knob.name == size_name:
            value = heuristic_pool_size(host, profile)
            low = knob.clip(value / RANGE_FACTOR)
            high = min(ceiling, knob.clip(value * RANGE_FACTOR))
        else:
            value = knob.default_for(host.cpu_count)
            low = knob.clip(value / RANGE_FACTOR)
            high = knob.clip(max(value * RANGE_FACTOR, value + 4))
        values[knob.name] = value
        ranges[knob.name] = (min(value, low), max(value, high))
    return values, ranges


def heuristic_recommendation(
    host: HostFacts, profile: WorkloadProfile
) -> tuple[KnobTuple, dict[str, KnobRange]]:
    """:func:`heuristic_prediction` as wire types."""
    values, ranges = heuristic_prediction(host, profile)
    return (
        KnobTuple(engine=host.engine, values=values),
        {name: KnobRange(low=low, high=high) for name, (low, high) in ranges.items()},
    )
