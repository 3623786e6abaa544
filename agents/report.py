"""The climb in progress and the report the agent uploads when it ends.

A report is dated by the wall clock once, when its climb starts; its end is that date plus
the climb's length on the monotonic clock, so a wall clock stepped during the climb cannot
make a report that ends before it starts (docs/agent.md, "Faults")."""

from __future__ import annotations

import statistics
import uuid
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from agents import knobs as knob_catalog
from agents.climber import Climber
from agents.profile import ThroughputMetric
from agents.service_client import DrainResult
from agents.wire import (
    MAX_TRACE_SAMPLES,
    ClimberInfo,
    ClimbReport,
    HostFacts,
    KnobTuple,
    Source,
    TraceSample,
    WorkloadProfile,
)

#: Samples at the start tuple averaged into the report's start throughput.
START_LEVEL_SAMPLES = 10


@dataclass(slots=True)
class Climb:
    """What the loop remembers about the climb in progress."""

    started_at: datetime
    started_mono: float
    profile: WorkloadProfile
    start_tuple: dict[str, int]
    source: Source
    model_version: str | None
    trace: deque[TraceSample]
    start_throughputs: list[float] = field(default_factory=list)
    fed_samples: int = 0
    converged_after: int | None = None
    reported: bool = False
    timed_out: bool = False

    @classmethod
    def begin(
        cls,
        *,
        started_at: datetime,
        started_mono: float,
        profile: WorkloadProfile,
        start_tuple: Mapping[str, int],
        source: Source,
        model_version: str | None = None,
    ) -> Climb:
        """A climb starting now (``started_at`` on the wall clock, ``started_mono`` on the
        monotonic one) from ``start_tuple``, with an empty trace."""
        return cls(
            started_at=started_at,
            started_mono=started_mono,
            profile=profile,
            start_tuple=dict(start_tuple),
            source=source,
            model_version=model_version,
            trace=deque(maxlen=MAX_TRACE_SAMPLES),
        )

    def record(
        self,
        *,
        t_s: float,
        knobs: Mapping[str, int],
        throughput: float,
        latency_ms: float | None,
        connections: int,
        climber_state: str,
    ) -> None:
        """One climbing sample into the trace (and into the start level while at the
        start tuple)."""
        self.trace.append(
            TraceSample(
                t_s=max(0.0, t_s),
                knobs=dict(knobs),
                throughput=throughput,
                latency_ms=latency_ms,
                connections=connections,
                state=climber_state[:32],
            )
        )
        if knobs == self.start_tuple and len(self.start_throughputs) < START_LEVEL_SAMPLES:
            self.start_throughputs.append(throughput)


def build_report(
    climb: Climb,
    *,
    host: HostFacts,
    climber: Climber,
    optimal: Mapping[str, int],
    levels_at_optimum: Sequence[float],
    names: Sequence[str],
    metric: ThroughputMetric,
    now_mono: float,
) -> ClimbReport:
    """The report of ``climb``, ending at ``now_mono`` (monotonic clock): ``optimal`` is the
    climber's best tuple inside the hard bounds, ``levels_at_optimum`` the throughputs
    measured there lately."""
    engine = host.engine
    at_optimum = statistics.fmean(levels_at_optimum) if levels_at_optimum else 0.0
    at_start = statistics.fmean(climb.start_throughputs) if climb.start_throughputs else at_optimum
    defaults = knob_catalog.default_tuple(engine, host.cpu_count)
    default_values = {n: defaults[n] for n in names if n in defaults}
    at_default = at_start if default_values == climb.start_tuple else None
    return ClimbReport(
        idempotency_key=str(uuid.uuid4()),
        host=host,
        profile=climb.profile,
        start_tuple=KnobTuple(engine=engine, values=climb.start_tuple),
        start_source=climb.source,
        start_model_version=climb.model_version,
        optimal_tuple=KnobTuple(engine=engine, values=dict(optimal)),
        default_tuple=KnobTuple(engine=engine, values=default_values) if default_values else None,
        throughput_start=at_start,
        throughput_optimal=at_optimum,
        throughput_default=at_default,
        converged=not climb.timed_out,
        samples_to_converge=climb.converged_after,
        trace=list(climb.trace),
        climber=ClimberInfo(
            name=type(climber).name,
            settings={**climber.settings(), "throughput_metric": metric},
        ),
        started_at=climb.started_at,
        finished_at=climb.started_at + timedelta(seconds=max(0.0, now_mono - climb.started_mono)),
    )


def report_summary(report: ClimbReport, delivery: DrainResult) -> dict[str, Any]:
    """The last report as the status file shows it."""
    return {
        "idempotency_key": report.idempotency_key,
        "finished_at": report.finished_at.isoformat(),
        "optimal_tuple": report.optimal_tuple.values,
        "throughput_optimal": report.throughput_optimal,
        "converged": report.converged,
        "delivered": delivery.remaining == 0 and not delivery.error,
    }
