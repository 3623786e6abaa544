"""A recommended start is a prior, not a fence: before the line search trusts the plausible
range, the climb compares the start with a clearly smaller size, and from a start well
above the cores keeps testing the cheap side down to the engine default (no lower than
twice the cores where the default lies above them) while nothing there is shown to gain
or to lose. A cold start far above the cores (someone's guess) is verified the same way,
down to twice the cores. Why: docs/climber.md ("Search", warm start).
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass, replace

from agents.climber.base import KnobDim
from agents.climber.pooltune.config import PooltuneConfig
from agents.climber.pooltune.economy import economy_rules
from agents.climber.pooltune.evidence import Comparison, Rules, Verdict
from agents.climber.pooltune.line_search import (
    LineSearch,
    Prober,
    Program,
    Request,
    peak_distance,
    value_below,
)

#: The shortest step (log2) a walk down still takes: a bound on the loss that leaves less
#: than this says the walk has reached the flank's fall.
MIN_WALK_STEP = 0.25


@dataclass(frozen=True, slots=True)
class _Walk:
    """The sizes a walk down probed (largest first) and the last one's verdict."""

    sizes: list[int]
    last: Comparison


def verify_warm_start(
    prober: Prober,
    config: PooltuneConfig,
    line: LineSearch,
    step: float,
    *,
    cpu_count: int,
    range_high: int,
    cold: bool = False,
) -> Program:
    """Compare the start with a clearly smaller size (half, as far as a probe may go),
    quickly (a loss is not worth measuring long: the economy walk looks for ties later).
    From a start above twice the cores, a tie or an unproven verdict there walks on down
    (:func:`_walk_down`; a ``cold`` start far above the cores, not a recommendation, has
    the time to re-test the loss that would end it). Better below and the search runs down
    from it; otherwise the range holds, with a first step up as large as a steep fall
    below says the peak lies beyond the range."""
    dim = line.dim
    start = prober.top[dim.name]
    if start <= dim.low:
        yield from line.run(step, 1)
        return
    h = min(1.0, prober.max_step(dim, -1))
    below = value_below(prober, dim, prober.top, h)
    if below is None:
        yield from line.run(step, 1)
        return
    smaller = {**prober.top, dim.name: below}
    rules = replace(
        economy_rules(config, smaller, dim, cpu_count),
        max_samples=None,
        visit_samples=None,
        gain_only=True,
    )
    verdict, forced = yield from prober.probe(smaller, rules=rules)
    if _unproven(verdict, forced) and start > 2 * cpu_count:
        walk = yield from _walk_down(
            prober,
            line,
            smaller,
            rules,
            floor=max(dim.low, 2 * cpu_count if cold else min(dim.default, 2 * cpu_count)),
            config=config,
            retest_loss=cold,
        )
        yield from _after_walk(prober, line, walk, start, step)
        return
    if verdict is Verdict.BETTER and not forced:
        yield from _descend(prober, line, smaller[dim.name], above=start)
        return
    if _unproven(verdict, forced):
        # Half the recommendation does as well: the range's claim that the start is the
        # smallest size near the best is not borne out, and the economy walk may look
        # below, on shown ties.
        line.flat_votes += 1
    if verdict is Verdict.WORSE and not forced:
        line.worse.append(dim.to_unit(smaller[dim.name]))
        # A curve that falls this steeply below the start puts the peak this far above it:
        # beyond the range, the evidence contradicts the range, and the first step up
        # follows the slope instead.
        units = dim.to_unit(start) - dim.to_unit(smaller[dim.name])
        distance = peak_distance(prober.gain(prober.top, smaller), units)
        if distance > dim.to_unit(max(range_high, 1)) - dim.to_unit(start):
            step = max(step, min(config.max_step, distance))
    line.low_bound = dim.to_unit(smaller[dim.name])
    yield from line.run(step, 1)


def _walk_down(
    prober: Prober,
    line: LineSearch,
    probe: dict[str, int],
    rules: Rules,
    *,
    floor: int,
    config: PooltuneConfig,
    retest_loss: bool = False,
) -> Generator[Request, None, _Walk]:
    """The recommendation may be wrong (an over-sized pool on a flat, stalling curve ties
    over a wide range): step by bounded step down to ``floor``, each probe against the
    start, until one is shown to gain, or to lose more than ``rollback_drop`` (the fall
    below a knee; a shelf's own dips lose less) even without its lowest sample. With
    ``retest_loss`` (a cold start far above the cores, not a recommendation: its walk has
    the time) the loss that would end the walk is re-tested once on fresh samples, A/B/A/B:
    one sunk visit of a probe must not leave the pool on the shelf."""
    dim = line.dim
    start = dict(prober.top)
    shelf = -math.log1p(-config.rollback_drop)
    sizes = [probe[dim.name]]
    last = Comparison(Verdict.EQUAL)
    retests = 1 if retest_loss else 0
    while probe[dim.name] > floor and (_unproven(*last) or last.verdict is Verdict.WORSE):
        bound = _bounded_step(prober, dim, start, probe, shelf)
        if bound < MIN_WALK_STEP:
            if not retests:
                break
            retests -= 1
            last = yield from prober.retest(
                start, probe, rules=replace(rules, max_samples=2 * config.visit_samples)
            )
            continue
        below = value_below(prober, dim, probe, min(1.0, prober.max_step(dim, -1), bound))
        if below is None:
            break
        below = max(floor, below, _lowest_at(dim, dim.to_unit(probe[dim.name]) - bound))
        if below >= probe[dim.name]:
            break
        probe = {**probe, dim.name: below}
        last = yield from prober.probe(probe, rules=rules)
        sizes.append(probe[dim.name])
    return _Walk(sizes, last)


def _bounded_step(
    prober: Prober, dim: KnobDim, start: dict[str, int], probe: dict[str, int], budget: float
) -> float:
    """The largest step (log2) below ``probe`` whose loss against ``start``, were the curve
    to go on falling at the mean slope measured from ``start`` down to ``probe`` (the loss
    without ``probe``'s lowest sample: one stall does not shorten the walk), stays within
    ``budget``: a flank seen to fall is approached in steps of bounded loss, not halved
    into (docs/climber.md, "Warm start")."""
    loss = prober.loss_shown(probe, start)
    span = dim.to_unit(start[dim.name]) - dim.to_unit(probe[dim.name])
    if loss <= 0.0 or span <= 0.0:
        return math.inf
    return (budget - loss) / (loss / span)


def _lowest_at(dim: KnobDim, coordinate: float) -> int:
    """The smallest value of ``dim`` at or above ``coordinate`` (a step's bound is not
    rounded past)."""
    if not math.isfinite(coordinate):
        return dim.low
    value = dim.from_unit(coordinate)
    return value + 1 if dim.to_unit(value) < coordinate else value


def _after_walk(prober: Prober, line: LineSearch, walk: _Walk, start: int, step: float) -> Program:
    """Search on from what the walk down found: from a shown gain, down from it; else from
    the size walked that measured highest against the start, inside the bracket of its
    walked neighbours (a shown loss bounds it below); else, nothing walked measured above
    the start, the range holds (sizes walked bound it below, as a shown tie did)."""
    dim = line.dim
    sizes = walk.sizes
    verdict, forced = walk.last
    if _unproven(verdict, forced) or len(sizes) > 1:
        # Nothing below was shown to lose, or the walk passed sizes that tied or lost less
        # than a knee: a shelf, where the economy walk may look, with shown ties.
        line.flat_votes += 1
    if verdict is Verdict.BETTER and not forced:
        yield from _descend(prober, line, sizes[-1], above=sizes[-2] if len(sizes) > 1 else start)
        return
    if verdict is Verdict.WORSE and not forced:
        line.worse.append(dim.to_unit(sizes[-1]))
    candidates = sizes if _unproven(verdict, forced) else sizes[:-1]
    gains = [prober.gain({**prober.top, dim.name: size}, prober.top) for size in candidates]
    if not candidates or max(gains) <= 0.0:
        line.low_bound = dim.to_unit(sizes[0])
        yield from line.run(step, 1)
        return
    index = gains.index(max(gains))
    line.high_bound = dim.to_unit(sizes[index - 1] if index else start)
    line.low_bound = dim.to_unit(sizes[index + 1]) if index + 1 < len(sizes) else -math.inf
    line.center = {**prober.top, dim.name: sizes[index]}
    prober.top = dict(line.center)
    yield from line.run(0.5, 1)


def _descend(prober: Prober, line: LineSearch, size: int, *, above: int) -> Program:
    """A gain shown at ``size`` below the start: the search runs down from it, the size
    probed above it bounding the bracket."""
    line.high_bound = line.dim.to_unit(above)
    line.center = {**prober.top, line.dim.name: size}
    prober.top = dict(line.center)
    yield from line.run_from(-1, 1.0)


def _unproven(verdict: Verdict, forced: bool) -> bool:
    """Neither a shown gain nor a shown loss: a tie, or any verdict the sample cap forced."""
    return verdict is Verdict.EQUAL or forced
