"""Test data: valid wire payloads built from small parts."""

from __future__ import annotations

import uuid
from datetime import timedelta

from agents.knobs import Engine
from agents.wire import (
    ClimberInfo,
    ClimbReport,
    HostFacts,
    KnobTuple,
    Source,
    TraceSample,
    WorkloadProfile,
    utcnow,
)

HOST = HostFacts(
    hostname="db-test",
    engine=Engine.MARIADB,
    engine_version="10.11.19",
    cpu_count=2,
    memory_bytes=1 << 30,
)
PROFILE = WorkloadProfile(window_s=30, connections=8, active_connections=3, qps=900, tps=60)


def make_report(*, key: str | None = None, trace_samples: int = 3) -> ClimbReport:
    now = utcnow()
    size = {"thread_pool_size": 4}
    return ClimbReport(
        idempotency_key=key or str(uuid.uuid4()),
        host=HOST,
        profile=PROFILE,
        start_tuple=KnobTuple(engine=Engine.MARIADB, values={"thread_pool_size": 2}),
        start_source=Source.LOCAL_HEURISTIC,
        optimal_tuple=KnobTuple(engine=Engine.MARIADB, values=size),
        throughput_start=50.0,
        throughput_optimal=60.0,
        converged=True,
        samples_to_converge=trace_samples,
        trace=[
            TraceSample(t_s=2.0 * i, knobs=size, throughput=60.0, connections=8)
            for i in range(trace_samples)
        ],
        climber=ClimberInfo(name="pooltune"),
        started_at=now - timedelta(minutes=2),
        finished_at=now,
    )
