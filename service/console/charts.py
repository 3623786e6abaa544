"""Chart data from climb traces: what the host page's charts draw (docs/console.md)."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import fmean
from typing import Any

from agents.wire import TraceSample

#: Sizes a curve needs before it is drawn as one.
MIN_CURVE_SIZES = 3
SWEEP_STATE_PREFIX = "sweep:"


def trace_series(samples: Sequence[TraceSample], size_knob: str) -> dict[str, Any]:
    """Columns for the climb chart: time, throughput, pool size, and the marked samples.

    A *move* is a sample whose knobs differ from the previous sample's (the climber probed or
    stepped); a *rollback* is a sample whose climber state says so. Unmarked samples are null,
    which the chart leaves out.
    """
    t: list[float] = []
    throughput: list[float] = []
    size: list[int | None] = []
    moves: list[float | None] = []
    rollbacks: list[float | None] = []
    previous: dict[str, int] | None = None
    for sample in samples:
        t.append(round(sample.t_s, 3))
        throughput.append(round(sample.throughput, 3))
        size.append(sample.knobs.get(size_knob))
        moved = previous is not None and sample.knobs != previous
        moves.append(sample.throughput if moved else None)
        rollbacks.append(sample.throughput if "rollback" in sample.state.lower() else None)
        previous = sample.knobs
    return {
        "size_knob": size_knob,
        "t": t,
        "throughput": throughput,
        "size": size,
        "moves": moves,
        "rollbacks": rollbacks,
        "points": len(t),
        "moves_count": sum(value is not None for value in moves),
        "rollbacks_count": sum(value is not None for value in rollbacks),
    }


def measured_curve(samples: Sequence[TraceSample], size_knob: str) -> dict[str, Any] | None:
    """Mean throughput per pool size: the sweep's samples if the trace is a sweep of the pool
    size, else every size the climb visited; None below ``MIN_CURVE_SIZES`` sizes."""
    swept = [s for s in samples if s.state.startswith(SWEEP_STATE_PREFIX)]
    kind = "sweep" if swept else "climb"
    if swept:
        samples = [s for s in swept if s.state == f"{SWEEP_STATE_PREFIX}{size_knob}"]
    by_size: dict[int, list[float]] = {}
    for sample in samples:
        size = sample.knobs.get(size_knob)
        if size is not None:
            by_size.setdefault(size, []).append(sample.throughput)
    if len(by_size) < MIN_CURVE_SIZES:
        return None
    sizes = sorted(by_size)
    return {
        "kind": kind,
        "size_knob": size_knob,
        "sizes": sizes,
        "throughput": [round(fmean(by_size[size]), 3) for size in sizes],
        "samples": [len(by_size[size]) for size in sizes],
    }
