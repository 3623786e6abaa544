"""Looks above the located pool size that a local search does not take: one step above once
the other knobs were searched, and one look at the pool's far end: as many groups (MariaDB)
or server connections (PgBouncer) as there are client connections, where no connection
shares its group or waits for a pool slot.

A local search stops on a shelf: on real servers many curves are flat, within a few percent,
from a few groups up to a size near the connection count, and rise to their best there
(sysbench point selects × 256 clients on 2 cores: 0.80–0.83 of the best from 2 to 32, the
best at 64; `datasets/mariadb-2core-v2`). Where the curve falls steadily above the best size
instead (write-heavy loads: 0.52 of the best at one group per connection), that look is a
deep probe; it is taken only where statements do not queue on row locks at the best size
(more connections only add waiters), the server's CPUs are not saturated there, the sizes
measured above it fall slowly enough, and halfway there (in log size) a probe shows a
tie within the loss that, carried on to the far end, stays within ``rollback_drop`` (the
drop at which the climber leaves a probe anyway). Where a probe on the way shows a fall,
the fall may steepen further up, so the next probe goes only as far as that fall, doubled,
keeps within ``rollback_drop``; where statements queue on row locks at a probe on the way,
the look ends there. A gain is re-tested before it is kept. Why and the figures:
docs/climber.md ("Search", the far end).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Mapping, Sequence

from agents.climber.base import KnobDim
from agents.climber.pooltune.config import PooltuneConfig
from agents.climber.pooltune.evidence import Rules, Verdict
from agents.climber.pooltune.line_search import Prober, Request

#: The far end must lie at least this far above the best size (log2 units): closer, the line
#: search has looked there already.
MIN_DISTANCE = 1.0
#: Where a curve falls on the way to the far end, the fall per log2 unit may grow by this
#: much before the next probe: PgBouncer TPC-B-like × 128 on 2 cores lost 4% per unit
#: from 8 to 32 server connections, 10% from 32 to 64, 16% from 64 to 128
#: (`datasets/pgbouncer-2core-v1`), as more backends queue on its four branch rows.
STEEPENING = 2.0
#: Probes on the way to the far end, the far end included, at most.
MAX_STEPS = 4


def far_end_size(
    dim: KnobDim,
    top: int,
    *,
    connections: float | None,
    ceiling: int,
    above: Sequence[tuple[int, float]],
    max_loss: float,
    cpu_used: float,
    cpu_limit: float,
    queues_on_locks: bool,
) -> int | None:
    """The size of one group per connection if it may be worth a look from ``top``, else
    None. ``above``: (size, measured log gain over ``top``) of the sizes measured above it;
    none measured, or one at or past the far end already, and there is nothing to look at;
    one whose fall, extrapolated, loses more than ``max_loss`` there, and the look is
    too deep. ``cpu_used``: the cores the server uses at ``top`` (0: unknown); at
    ``cpu_limit`` or more its CPUs are saturated and more threads can only queue for them,
    and unknown, nothing says a deep probe is worth its risk. ``queues_on_locks``: statements
    queue on row locks at ``top``, where more connections only queue there too (every real
    curve with such waits falls past its best on both engines: docs/climber.md)."""
    if queues_on_locks or not connections or not above or not 0 < cpu_used < cpu_limit:
        return None
    target = min(ceiling, dim.clip(connections))
    units = dim.to_unit(target) - dim.to_unit(top)
    if units < MIN_DISTANCE or max(size for size, _ in above) >= target:
        return None
    # The fall per log2 unit, pooled over the sizes above (each measured briefly).
    lost = -sum(gain for _, gain in above)
    spanned = sum(dim.to_unit(size) - dim.to_unit(top) for size, _ in above)
    if max(lost / spanned, 0.0) * units > -math.log1p(-max_loss):
        return None
    return target


def shelf_tolerance(dim: KnobDim, top: int, near: int, far: int, max_loss: float) -> float:
    """The loss ``near`` may show against ``top`` for the same fall per log2 unit, carried
    on to ``far``, to stay within ``max_loss``."""
    span = dim.to_unit(far) - dim.to_unit(top)
    return -math.log1p(-max_loss) * (dim.to_unit(near) - dim.to_unit(top)) / span


def next_size(
    dim: KnobDim, here: int, far: int, *, lost: float, slope: float, budget: float
) -> int | None:
    """The next size on the way from ``here`` to ``far`` once a probe on the way tied:
    ``far`` where the steepest fall seen so far (``slope``, log loss per log2 unit),
    steepened by :data:`STEEPENING` and carried on from ``lost`` (``here``'s loss against
    ``top``), keeps it within ``budget``; else the size where that fall reaches ``budget``;
    None when that lies no further up than ``here``."""
    room = budget - lost
    rate = STEEPENING * max(slope, 0.0)
    if room <= 0.0:
        return None
    if rate * (dim.to_unit(far) - dim.to_unit(here)) <= room:
        return far
    size = min(far, dim.from_unit(dim.to_unit(here) + room / rate))
    return size if size > here else None


def look_at_far_end(
    prober: Prober,
    config: PooltuneConfig,
    dim: KnobDim,
    *,
    measured: Sequence[dict[str, int]],
    connections: float | None,
    ceiling: int,
    cpu_used: float,
    cpu_count: int,
    queues_on_locks: Callable[[Mapping[str, int]], bool],
) -> Generator[Request, None, bool]:
    """Look at the far end from ``top`` when :func:`far_end_size` allows it, by way of the
    size halfway there (in log size) and, where the curve falls on the way, of the sizes
    :func:`next_size` bounds. Each must be shown to tie with ``top`` within the loss that,
    carried on, keeps the far end within ``rollback_drop``, with statements not queueing on
    row locks there (``queues_on_locks``: more connections would only queue on the same
    rows). A gain on the way or at the far end, re-tested, becomes ``top`` (True)."""
    top = dict(prober.top)
    others = {name: value for name, value in top.items() if name != dim.name}
    # One entry per size (a size probed twice weighs once).
    above = {
        knobs[dim.name]: prober.gain(knobs, top)
        for knobs in measured
        if knobs[dim.name] > top[dim.name] and all(knobs[n] == v for n, v in others.items())
    }
    far = far_end_size(
        dim,
        top[dim.name],
        connections=connections,
        ceiling=ceiling,
        above=list(above.items()),
        max_loss=config.max_probe_loss,
        cpu_used=cpu_used,
        cpu_limit=config.far_end_cpu_share * cpu_count,
        queues_on_locks=queues_on_locks(top),
    )
    if far is None:
        return False
    budget = -math.log1p(-config.rollback_drop)
    here, lost, slope = top[dim.name], 0.0, 0.0
    # Halfway first (in log size): the same fall carried on to there must show as a tie on
    # the way, and a curve that falls past its shelf is left at half the depth.
    size: int | None = dim.from_unit((dim.to_unit(here) + dim.to_unit(far)) / 2.0)
    for _ in range(MAX_STEPS):
        if size is None:
            return False
        probe = {**top, dim.name: size}
        if size == far:
            # A gain the sample cap forced is unproven, not absent: the re-test decides.
            verdict, _ = yield from prober.probe(probe, rules=Rules(gain_only=True))
            if verdict is not Verdict.BETTER:
                return False
            return (yield from _keep(prober, dim, top, probe))
        shelf = Rules(
            loss_tolerance=shelf_tolerance(dim, top[dim.name], size, far, config.rollback_drop),
            shown_tie_z=config.tie_z,
            max_samples=config.economy_samples,
            visit_samples=config.economy_visit_samples,
        )
        verdict, forced = yield from prober.probe(probe, rules=shelf)
        if verdict is Verdict.BETTER and not forced:
            return (yield from _keep(prober, dim, top, probe))
        # A shown tie, or a gain the sample cap left unproven: the shelf holds here.
        if verdict is not Verdict.BETTER and (forced or verdict is not Verdict.EQUAL):
            return False
        if queues_on_locks(probe):
            return False
        now_lost = max(0.0, -prober.gain(probe, top))
        # Only a fall shown beyond the noise bounds the next step: on a noisy shelf a
        # loss within it is no fall, and the look goes on to the far end.
        paired = prober.paired_gain(probe, top)
        if paired is not None and paired[0] + config.tie_z * paired[1] < 0.0:
            slope = max(slope, (now_lost - lost) / (dim.to_unit(size) - dim.to_unit(here)))
        here, lost = size, now_lost
        size = next_size(dim, here, far, lost=lost, slope=slope, budget=budget)
    return False


def look_a_step_above(prober: Prober, dim: KnobDim, ceiling: int) -> Generator[Request, None, bool]:
    """One probe half a log2 unit above ``top`` (gains only, at most ``ceiling``); True if it
    gained and ``top`` is there. A gain the sample cap forced is unproven, not absent: the
    re-test decides (a moved optimum measured 3% above on six samples, 8% in truth)."""
    top = dict(prober.top)
    above = min(ceiling, dim.from_unit(dim.to_unit(top[dim.name]) + 0.5))
    if above <= top[dim.name]:
        return False
    probe = {**top, dim.name: above}
    verdict, forced = yield from prober.probe(probe, rules=Rules(gain_only=True))
    if verdict is not Verdict.BETTER:
        return False
    if not forced:
        prober.top = probe
        return True
    return (yield from _keep(prober, dim, top, probe))


def _keep(
    prober: Prober, dim: KnobDim, top: dict[str, int], probe: dict[str, int]
) -> Generator[Request, None, bool]:
    """Far from every size the climb measured, a gain is re-tested before it is kept."""
    prober.top = probe
    if (yield from prober.confirm(dim, top, probe)):
        return True
    prober.top = top
    return False
