"""Read training examples from the service's database, streaming.

Rows are read with a server-side cursor in batches (``yield_per``) as plain column tuples, not
ORM objects, so a table of a million reports costs one batch of memory at a time. Each report
becomes an :class:`~trainer.examples.Example`: its group is the dataset workload group when the
report came from a dataset, else the host; its curve comes from the trace — a dataset's sweep,
or the (pool size, throughput) samples a climb visited.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from agents import knobs
from agents.knobs import Engine
from agents.wire import HostFacts, WorkloadProfile
from service.reports.models import Report
from service.reports.trace_codec import decode_trace
from trainer.examples import Example
from trainer.regret import Curve

logger = logging.getLogger(__name__)

#: A climb trace must visit at least this many pool sizes to count as a curve.
MIN_CURVE_SIZES = 3


def _curve(trace_blob: bytes, size_name: str) -> Curve | None:
    samples = decode_trace(trace_blob)
    swept = [s for s in samples if s.state.startswith("sweep:")]
    if swept:
        samples = [s for s in swept if s.state == f"sweep:{size_name}"]
    points = [(s.knobs[size_name], s.throughput) for s in samples if size_name in s.knobs]
    if len({size for size, _ in points}) < MIN_CURVE_SIZES:
        return None
    return Curve.from_points(points)


def example_from_row(row: Any, engine: Engine) -> Example:
    size_name = knobs.POOL_SIZE_KNOB[engine]
    host = HostFacts.model_validate(row.host_facts)
    settings = (row.climber or {}).get("settings", {})
    group = settings.get("workload_group") or f"host:{row.host_id}"
    return Example(
        group=str(group),
        host=host,
        profile=WorkloadProfile.model_validate(row.profile),
        optimal_tuple=dict(row.optimal_tuple["values"]),
        curve=_curve(row.trace, size_name),
        origin=f"report:{row.id}",
    )


def read_examples(
    session: Session, *, engine: Engine, batch_size: int = 2000, limit: int | None = None
) -> Iterator[Example]:
    """Converged reports of ``engine`` as examples, oldest first, streamed in batches."""
    statement = (
        select(
            Report.id,
            Report.host_id,
            Report.host_facts,
            Report.profile,
            Report.optimal_tuple,
            Report.climber,
            Report.trace,
        )
        .where(Report.engine == engine.value, Report.converged.is_(True))
        .order_by(Report.id)
        .execution_options(yield_per=batch_size, stream_results=True)
    )
    if limit is not None:
        statement = statement.limit(limit)
    skipped = 0
    for row in session.execute(statement):
        try:
            yield example_from_row(row, engine)
        except (ValueError, KeyError, TypeError) as exc:
            # One malformed row (an old schema, a hand edit) must not sink a training run.
            skipped += 1
            logger.warning("skipping report %s: %s", row.id, exc)
    if skipped:
        logger.warning("skipped %d unreadable reports", skipped)
