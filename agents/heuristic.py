"""The fallback starting tuple: the pool-size rule of thumb, clipped to what makes sense.

``size = cores × (1 + W/S)`` (W: off-CPU wait, S: CPU time per request) keeps every core busy
while threads block; it is clipped to the knob's catalog bounds and to the number of connections
(threads beyond the connections that could use them never help). The other tuned knobs keep the
engine defaults. The plausible range is a factor of two either side, since the rule is rough.

The service answers with this when no model is promoted or the model fails, and the agent uses it
locally when the service cannot be reached, so both give the same answer for the same profile.
"""

from __future__ import annotations

from agents import knobs
from agents.wire import HostFacts, KnobRange, KnobTuple, WorkloadProfile

#: How far either side of the heuristic's answer the optimum plausibly lies (a factor).
RANGE_FACTOR = 2.0


def heuristic_pool_size(host: HostFacts, profile: WorkloadProfile) -> int:
    size_knob = knobs.knob(host.engine, knobs.POOL_SIZE_KNOB[host.engine])
    blocking = profile.blocking_coefficient
    size = float(host.cpu_count) * (1.0 + blocking) if blocking is not None else host.cpu_count
    if profile.connections > 0:
        size = min(size, float(profile.connections))
    return size_knob.clip(size)


def heuristic_recommendation(
    host: HostFacts, profile: WorkloadProfile
) -> tuple[KnobTuple, dict[str, KnobRange]]:
    """The heuristic start tuple of every tuned knob, with a plausible range for each."""
    values = knobs.default_tuple(host.engine, host.cpu_count)
    size_name = knobs.POOL_SIZE_KNOB[host.engine]
    values[size_name] = heuristic_pool_size(host, profile)
    ranges: dict[str, KnobRange] = {}
    for name, value in values.items():
        knob = knobs.knob(host.engine, name)
        low = knob.clip(max(knob.minimum, value / RANGE_FACTOR))
        high = knob.clip(value * RANGE_FACTOR)
        ranges[name] = KnobRange(low=min(low, value), high=max(high, value))
    return KnobTuple(engine=host.engine, values=values), ranges
