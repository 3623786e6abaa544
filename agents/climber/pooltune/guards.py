"""What a probe's measurement must pass before the climb believes it, and the probe the
climb does not take at all. Why: docs/climber.md ("Search")."""

from __future__ import annotations

import math
from collections.abc import Mapping

from agents.climber.base import KnobDim
from agents.climber.pooltune.config import PooltuneConfig
from agents.climber.pooltune.evidence import Evidence


def plausible(
    evidence: Evidence,
    config: PooltuneConfig,
    size: KnobDim,
    knobs: Mapping[str, int],
    reference: Mapping[str, int],
    probed_from: int,
) -> bool:
    """A pool c times larger or smaller changes throughput by at most c (a group runs
    about one thread; on the scalability law's falling tail throughput is at best
    inversely proportional): a larger difference, unless the reference was measured
    again since the probe began, is the workload changing between the two, so the
    reference is measured again first (which also watches it for the change)."""
    if knobs.get(size.name) == reference.get(size.name):
        return True
    if measured_since(evidence, reference, probed_from):
        return True
    units = abs(size.to_unit(knobs[size.name]) - size.to_unit(reference[size.name]))
    difference, stderr = evidence.difference(reference, knobs)
    return abs(difference) <= units * math.log(2.0) + config.z * stderr


def fell_with_probe(
    evidence: Evidence, config: PooltuneConfig, reference: Mapping[str, int], probed_from: int
) -> bool:
    """The ``reference``, measured again after a probe that began at ``probed_from`` and was
    rolled back, fell by ``rollback_drop`` or more from its level before the probe: the
    server fell, not only the probe (a host stall, a checkpoint)."""
    readings = evidence.readings(reference)
    before = [r.level for r in readings if r.step <= probed_from]
    after = [r.level for r in readings if r.step > probed_from]
    if not before or not after:
        return False
    fall = evidence.location(before) - evidence.location(after)
    return fall >= -math.log(1.0 - config.rollback_drop)


def lost_before_the_drop(
    evidence: Evidence,
    config: PooltuneConfig,
    reference: Mapping[str, int],
    probe: Mapping[str, int],
) -> bool:
    """The samples of a ``probe`` rolled back on a sharp drop, taken before its last two
    (the drop), already lose more than ``economy_epsilon`` against ``reference``, or are
    fewer than a visit: the size lost, not only two samples of it. A full visit level with
    the reference and then two low samples is the server dipping in time; one more look
    decides, and the size does not bound the economy walk (docs/climber.md, "Per sample")."""
    earlier = evidence.readings(probe)[:-2]
    base = evidence.readings(reference)
    if len(earlier) < config.visit_samples or not base:
        return True
    difference, _ = evidence.paired_difference(base, earlier)
    return difference < math.log1p(-config.economy_epsilon)


def measured_since(evidence: Evidence, knobs: Mapping[str, int], step: int) -> bool:
    """``knobs`` was measured after ``step`` (a reference seen again since a probe began)."""
    last = evidence.last_seen(knobs)
    return last is not None and last > step


def queues_on_locks(evidence: Evidence, config: PooltuneConfig, knobs: Mapping[str, int]) -> bool:
    """Statements queue on row locks at ``knobs``: the samples there show the lock signal at
    ``lock_contention`` or more (MariaDB: row-lock waits per statement; PgBouncer: the share
    of the pools' backends in a transaction that wait on a lock). More threads then only
    add waiters, and fewer may gain (docs/climber.md, "Search")."""
    return 0 < config.lock_contention <= evidence.signal("locks", knobs)


def cpu_bound_below_cores(
    evidence: Evidence,
    config: PooltuneConfig,
    size: str,
    cpu_count: int,
    probe: Mapping[str, int],
    reference: Mapping[str, int],
) -> str | None:
    """Why the probe is not taken (a GUARD event), or None: it has fewer groups than cores,
    and fewer than the cores the server uses at ``reference`` (with ``cpu_cap_margin``), so
    it would cap the server's CPU and can only lose — unless statements queue on row locks
    there (``lock_contention``), where CPU is also spent on the contention."""
    probe_size = probe.get(size, 0)
    if config.cpu_cap_margin <= 0 or probe_size >= min(cpu_count, reference.get(size, 0)):
        return None
    used = evidence.signal("cpu", reference)
    if used < config.cpu_cap_margin * probe_size:
        return None
    if queues_on_locks(evidence, config, reference):
        return None
    return (
        f"{size}={probe_size} not probed: the server uses {used:.1f} of {cpu_count} cores "
        f"at {reference[size]}, more than {probe_size} groups can run"
    )


def step_down_limit(config: PooltuneConfig, headroom: float) -> float:
    """The largest step down (log2) from a best size measured ``headroom`` (log) above the
    start: in the worst case throughput falls in proportion to the pool (the most fewer
    threads can cost), and the probe must keep ``1 − max_probe_loss`` of the start's level."""
    allowed = (headroom - math.log1p(-config.max_probe_loss)) / math.log(2)
    return max(config.min_step, min(config.max_step, allowed))


def lowest_probe(
    evidence: Evidence,
    config: PooltuneConfig,
    size: KnobDim,
    cpu_count: int,
    base: Mapping[str, int],
    headroom: float,
) -> int:
    """The smallest pool a probe below ``base`` may take, by the worst case of
    :func:`step_down_limit` rounded up (2.4 taken as 2 would halve the pool, and an IO-bound
    server may lose more than half there; a rounding inside ``epsilon`` is no loss). Where
    statements queue on row locks fewer threads may gain: any size, unless ``base`` itself
    lost more than ``epsilon`` (a falling flank, where the worst case holds). Where the
    server keeps its cores busy its threads wait for a core, not off it: down to the cores
    at least."""
    if queues_on_locks(evidence, config, base) and headroom >= -config.epsilon:
        return size.low
    bound = base[size.name] * math.exp(math.log1p(-config.max_probe_loss) - headroom)
    lowest = max(size.low, min(size.high, math.ceil(bound * (1.0 - config.epsilon) - 1e-9)))
    if evidence.signal("cpu", base) * config.cpu_cap_margin >= cpu_count:
        return min(lowest, max(size.low, cpu_count))
    return lowest


def size_ceiling(size: KnobDim, cpu_count: int, connections: float | None) -> int:
    """The largest pool worth probing: more groups than connections cannot help, and
    connections land in groups by their id modulo the size, so twice the connections
    leaves room for ids that are not consecutive."""
    if not connections:
        return size.high
    return max(size.low, min(size.high, max(cpu_count, 2 * int(connections))))
