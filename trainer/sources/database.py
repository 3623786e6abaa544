"""Training examples from the service's database: its converged reports, streamed.

Each report becomes an :class:`~trainer.examples.Example`: its group is the dataset workload
group when the report came from a dataset, else the host; its curve comes from the trace — a
dataset's sweep, or the (pool size, throughput) samples a climb visited.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from sqlalchemy import Row
from sqlalchemy.orm import Session

from agents import knobs
from agents.knobs import Engine
from agents.wire import HostFacts, TraceKind, WorkloadProfile
from service.recommendations.intervals import REAL
from service.reports.repository import ExampleColumns, ReportRepository
from service.reports.trace_codec import decode_trace
from trainer.examples import Example, dataset_domain
from trainer.regret import Curve

logger = logging.getLogger(__name__)

#: A climb trace must visit at least this many pool sizes to count as a curve.
MIN_CURVE_SIZES = 3


def trace_curves(trace_blob: bytes, size_name: str) -> dict[str, Curve]:
    """The trace's curves by knob: each knob's sweep samples; without a sweep, the pool sizes
    a climb visited (when at least :data:`MIN_CURVE_SIZES` of them)."""
    samples = decode_trace(trace_blob)
    swept = [s for s in samples if s.kind == TraceKind.SWEEP]
    points: dict[str, list[tuple[float, float]]] = {}
    if swept:
        for s in swept:
            if s.sweep_knob is not None and s.sweep_knob in s.knobs:
                points.setdefault(s.sweep_knob, []).append((s.knobs[s.sweep_knob], s.throughput))
    else:
        points[size_name] = [
            (s.knobs[size_name], s.throughput) for s in samples if size_name in s.knobs
        ]
    return {
        knob: Curve.from_points(knob_points)
        for knob, knob_points in points.items()
        if len({value for value, _ in knob_points}) >= MIN_CURVE_SIZES
    }


def _domain(climber: dict[str, Any] | None) -> str:
    """A dataset's report is real or simulated as its dataset; an agent's report is real."""
    climber = climber or {}
    dataset = (climber.get("settings") or {}).get("dataset")
    if climber.get("name") == "dataset" and isinstance(dataset, str):
        return dataset_domain(dataset)
    return REAL


def example_from_row(row: Row[ExampleColumns], engine: Engine) -> Example:
    size_name = knobs.POOL_SIZE_KNOB[engine]
    host = HostFacts.model_validate(row.host_facts)
    group = (row.climber or {}).get("workload_group") or f"host:{row.host_id}"
    curves = trace_curves(row.trace, size_name)
    return Example(
        group=str(group),
        host=host,
        profile=WorkloadProfile.model_validate(row.profile),
        optimal_tuple=dict(row.optimal_tuple["values"]),
        curve=curves.pop(size_name, None),
        origin=f"report:{row.id}",
        domain=_domain(row.climber),
        knob_curves=curves,
    )


def read_examples(
    session: Session, *, engine: Engine, batch_size: int = 2000, limit: int | None = None
) -> Iterator[Example]:
    """Converged reports of ``engine`` as examples, oldest first, streamed in batches."""
    skipped = 0
    rows = ReportRepository(session).stream_converged(
        engine.value, batch_size=batch_size, limit=limit
    )
    for row in rows:
        try:
            yield example_from_row(row, engine)
        except (ValueError, KeyError, TypeError) as exc:
            # One malformed row (an old schema, a hand edit) must not sink a training run.
            skipped += 1
            logger.warning("skipping report %s: %s", row.id, exc)
    if skipped:
        logger.warning("skipped %d unreadable reports", skipped)
