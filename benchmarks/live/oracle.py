"""The oracle of a live case, measured by the agent's own sweep engine (:mod:`agents.sweep`):
fixed pool sizes in interleaved repeats, and two sizes side by side (A/B/A/B)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from agents.state import OriginalTupleFile
from agents.sweep import Point, Sweeper, SweepPlan, SweepResult
from benchmarks.live.cases import SAMPLE_S
from benchmarks.live.observer import Observer


def sweep_sizes(
    observer: Observer,
    sizes: Sequence[int],
    *,
    dwell_s: float,
    repeats: int,
    state_dir: Path,
) -> SweepResult:
    """Hold each size ``dwell_s`` seconds per repeat, in the sweep's interleaved order; the
    first sample after each change is dropped. The pool size in force before is restored."""
    plan = SweepPlan(
        knob=observer.knob,
        values=tuple(sizes),
        dwell_s=dwell_s,
        repeats=repeats,
        sample_period_s=SAMPLE_S,
        discard_samples=1,
        metric=observer.metric,
        load_pids=observer.load_pids,
    )
    state = OriginalTupleFile(state_dir / "original-tuple.json")
    return Sweeper(target=observer.target, plan=plan, state=state).run()


def measured_points(result: SweepResult) -> dict[int, Point]:
    """The sizes that kept at least one sample."""
    return {point.value: point for point in result.points if point.count}


def side_by_side(
    observer: Observer, first: int, second: int, *, dwell_s: float, state_dir: Path
) -> float:
    """Mean throughput at ``first`` / at ``second``, measured in one window, alternated
    A/B/A/B so that the server's drift does not decide the ratio."""
    points = measured_points(
        sweep_sizes(observer, (first, second), dwell_s=dwell_s, repeats=2, state_dir=state_dir)
    )
    if first not in points or second not in points:
        return math.nan  # every sample of one side was lost (failed counter reads)
    return points[first].mean / points[second].mean
