"""Typed factories for the dataset builder's tests: sweeps and stored cases with the shape
the real ones have (every sample, points, a baseline profile), built from a given curve."""

from __future__ import annotations

import random
import statistics
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from agents.knobs import Engine
from agents.sweep import Point, SweepPlan, SweepResult, SweepSample
from agents.wire import WorkloadProfile
from scripts.mariadb_dataset.cases import (
    OVERSUBSCRIBE,
    SIZE,
    STALL,
    Case,
    Timing,
    case_definition,
)
from scripts.mariadb_dataset.records import CaseRecord, Status

#: Tiny timing for tests: two sizes, one repeat.
TEST_TIMING = Timing(
    dwell_s=3.0,
    sample_period_s=1.0,
    discard_samples=1,
    repeats=2,
    secondary_repeats=1,
    baseline_s=2.0,
    warmup_s=1.0,
    size_grid=(1, 2, 4, 8),
    oversubscribe_grid=(1, 3, 10),
    stall_grid=(10, 500),
)

HOST: dict[str, Any] = {
    "hostname": "bench-1",
    "cpu_count": 2,
    "cpu_model": "AMD EPYC",
    "memory_bytes": 25_276_502_016,
    "kernel": "6.18.44",
    "machine_id": "0123",
    "sysbench_version": "sysbench 1.0.20",
    "engine_version": "10.11.19-MariaDB-0+deb12u1",
}


def profile(*, connections: int, qps: float) -> WorkloadProfile:
    return WorkloadProfile(
        window_s=6.0,
        connections=connections,
        active_connections=min(connections, 3.0),
        qps=qps,
        tps=qps / 20,
        read_fraction=0.8,
        latency_ms=1.5,
        cpu_ms_per_request=0.4,
        wait_ms_per_request=1.1,
        sync_ms_per_request=0.01,
        extras={"threadpool_threads": 4.0},
    )


def sweep(
    knob: str,
    curve: Mapping[int, float],
    *,
    repeats: int = 2,
    per_visit: int = 3,
    other_cpu: float = 0.05,
    connections: int = 16,
    seed: int = 0,
) -> SweepResult:
    """A sweep of ``knob`` whose true curve is ``curve`` (value → throughput), ±5 % noise."""
    rng = random.Random(seed)
    values = tuple(curve)
    samples = []
    t = 0.0
    for repeat in range(repeats):
        for value in values if repeat % 2 == 0 else values[::-1]:
            for index in range(per_visit):
                t += 1.0
                samples.append(
                    SweepSample(
                        value=value,
                        repeat=repeat,
                        index=index,
                        t_s=t,
                        duration_s=1.0,
                        throughput=curve[value] * (1 + rng.uniform(-0.05, 0.05)),
                        latency_ms=1.0 + value / 10,
                        discarded=index == 0,
                        server_cpu=1.6,
                        load_cpu=0.3,
                        other_cpu=other_cpu,
                    )
                )
    points = []
    for value in values:
        kept = [s for s in samples if s.value == value and not s.discarded]
        points.append(
            Point(
                value=value,
                samples=tuple(s.throughput for s in kept),
                latencies_ms=tuple(s.latency_ms for s in kept if s.latency_ms is not None),
                visit_means=tuple(
                    statistics.fmean(s.throughput for s in kept if s.repeat == r)
                    for r in range(repeats)
                ),
                other_cpu=other_cpu,
                server_cpu=1.6,
                load_cpu=0.3,
            )
        )
    started = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    is_size = knob == SIZE
    return SweepResult(
        engine=Engine.MARIADB,
        plan=SweepPlan(
            knob=knob,
            values=values,
            dwell_s=float(per_visit),
            repeats=repeats,
            sample_period_s=1.0,
            discard_samples=1,
            metric="queries",
            baseline_s=2.0 if is_size else 0.0,
            load_pids=(4242,),
        ),
        original_tuple={knob: 2 if is_size else (3 if knob == OVERSUBSCRIBE else 500)},
        points=tuple(points),
        samples=tuple(samples),
        started_at=started,
        finished_at=started + timedelta(seconds=t),
        profile=profile(connections=connections, qps=max(curve.values())),
        baseline_profile=(
            profile(connections=connections, qps=curve.get(2, max(curve.values())))
            if is_size
            else None
        ),
        restored={knob: 2},
        notes=(),
    )


#: A curve with its optimum at 4 and one rising with the stall limit's inverse.
SIZE_CURVE = {1: 600.0, 2: 900.0, 4: 1500.0, 8: 1450.0}
OVERSUBSCRIBE_CURVE = {1: 800.0, 3: 900.0, 10: 1000.0}
STALL_CURVE = {10: 1800.0, 500: 900.0}


def case_record(
    case: Case,
    *,
    timing: Timing = TEST_TIMING,
    host: Mapping[str, Any] = HOST,
    status: Status = "done",
    other_cpu: float = 0.05,
    dataset: str = "mariadb-2core-v2",
) -> CaseRecord:
    """A stored case as the runner writes it, measured on ``host``."""
    sweeps = {SIZE: sweep(SIZE, SIZE_CURVE, other_cpu=other_cpu, connections=case.clients)}
    if case.secondary:
        sweeps[OVERSUBSCRIBE] = sweep(OVERSUBSCRIBE, OVERSUBSCRIBE_CURVE, other_cpu=other_cpu)
        sweeps[STALL] = sweep(STALL, STALL_CURVE, other_cpu=other_cpu)
    return CaseRecord(
        dataset=dataset,
        workload_id=case.workload_id,
        status=status,
        definition=case_definition(case, timing),
        host=dict(host),
        server={
            "name": case.workload.server,
            "version": host["engine_version"],
            "command_line": ["/usr/sbin/mariadbd", "--no-defaults"],
            "started_at": "2026-11-23T12:00:00+00:00",
            "cases_before": [],
        },
        sysbench={
            "command": f"/usr/bin/sysbench {case.workload.script} --threads={case.clients} run",
            "ok": status != "failed",
            "version": host["sysbench_version"],
            "log": "sysbench.log",
        },
        timings={
            "started_at": "2026-11-23T12:00:00+00:00",
            "finished_at": "2026-11-23T12:02:30+00:00",
            "measuring_s": 150.0,
            "prepare_s": 1.0,
            "estimated_s": timing.case_seconds(case),
            "command": "make_mariadb_dataset",
        },
        other_cpu={"mean_cores": other_cpu, "threshold_cores": 0.25, "quiet": other_cpu <= 0.25},
        sweeps=sweeps,
    )
