"""The profile an agent computes from a simulated server's counters, field by field as
:mod:`agents.profile` computes it from a real one.

Here a simulated request is one statement (one request to the pool, as MariaDB's pool sees a
client statement) and its rounds are 1 + the pool's waits per statement, as the agent counts
them; :meth:`agents.sim.SimServer.measured_profile` keeps sim-v1's older reading (a request is a
transaction of ``rounds`` statements, CPU time without contention).
"""

from __future__ import annotations

import math

import numpy as np

from agents.profile import off_cpu_wait_ms, think_time_ms
from agents.sim.model import DEFAULT_OVERSUBSCRIBE, DEFAULT_STALL_LIMIT_MS, SimWorkload
from agents.wire import WorkloadProfile


def agent_profile(
    workload: SimWorkload,
    rng: np.random.Generator,
    *,
    size: float,
    oversubscribe: float = DEFAULT_OVERSUBSCRIBE,
    stall_limit: float = DEFAULT_STALL_LIMIT_MS,
    statements_per_transaction: float | None = None,
    read_fraction: float | None = None,
    window_s: float = 30.0,
    measurement_cv: float = 0.1,
) -> WorkloadProfile:
    """What the agent would report at one tuple, each measured value with lognormal noise of
    ``measurement_cv``.

    qps = the throughput; tps = qps / ``statements_per_transaction`` (0 for autocommit
    statements, ``None``); latency = what ``query_response_time`` times per statement (the
    pool's queue, the untimed CPU share and most of a short burst's wait for a CPU not in it);
    CPU = the server's CPU time per statement, contention and context switches included;
    W = latency − CPU, not below 0; active = active threads (not in an announced wait) plus
    queued requests; think = idle connections over qps (Little's law); sync = the latch time
    of contention. The server cannot time thread
    creation, so ``thread_create_ms`` is unknown, as on a real server.
    """

    def noisy(value: float) -> float:
        return max(0.0, value * float(rng.lognormal(0.0, measurement_cv)))

    point = workload.operating_point(size, oversubscribe, stall_limit)
    qps = noisy(float(point.throughput))
    latency = noisy(float(point.timed_ms))
    cpu = noisy(float(point.server_cpu_ms))
    connections = workload.connections
    active = min(noisy(float(point.active)), float(connections))
    tps = 0.0 if statements_per_transaction is None else qps / statements_per_transaction
    return WorkloadProfile(
        window_s=window_s,
        connections=connections,
        active_connections=active,
        qps=qps,
        tps=tps,
        read_fraction=read_fraction,
        latency_ms=latency,
        cpu_ms_per_request=cpu,
        wait_ms_per_request=off_cpu_wait_ms(latency, cpu),
        rounds_per_request=workload.rounds,
        think_ms=think_time_ms(connections, active, qps),
        lock_waits_per_s=noisy(float(point.throughput) * workload.lock_conflict),
        thread_create_ms=None,
        sync_ms_per_request=noisy(float(point.sync_ms)),
    )


def statements_per_transaction(rng: np.random.Generator) -> float | None:
    """A draw for a workload's transactions: a third autocommit (``None``), else 2–40
    statements per transaction (sysbench's OLTP scripts: 6–20)."""
    if rng.random() < 1.0 / 3.0:
        return None
    return float(math.exp(rng.uniform(math.log(2.0), math.log(40.0))))
