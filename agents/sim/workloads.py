"""Random workloads for the benchmark and the simulated dataset.

Contention parameters are drawn relative to the core count (κ·cores², σ·cores) so a
"CPU-bound with contention" workload peaks near its cores on 2 cores and on 128 alike.
"""

from __future__ import annotations

import dataclasses
import enum
import math

import numpy as np

from agents.sim.model import SimWorkload


class WorkloadKind(enum.StrEnum):
    CPU_BOUND = "cpu"
    IO_BOUND = "io"
    LOCK_BOUND = "lock"
    LIGHT = "light"


_CORE_CHOICES = (2, 4, 8, 16, 32, 48, 64, 96, 128)


def _log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(math.exp(rng.uniform(math.log(low), math.log(high))))


def random_workload(
    rng: np.random.Generator,
    *,
    kind: WorkloadKind | str | None = None,
    cores: int | None = None,
    connections: int | None = None,
    max_size: int = 128,
) -> SimWorkload:
    """Draw one workload: 2–128 cores, 1–4096 connections, CPU-bound to IO/lock-bound,
    light to heavy load. ``kind`` picks a family (random when ``None``)."""
    chosen = (
        WorkloadKind(kind)
        if kind is not None
        else WorkloadKind(str(rng.choice([k.value for k in WorkloadKind])))
    )
    n_cores = cores if cores is not None else int(rng.choice(_CORE_CHOICES))
    cpu_ms = _log_uniform(rng, 0.05, 5.0)
    rounds = float(rng.integers(1, 21))
    contention = _log_uniform(rng, 0.02, 0.6)
    coherency = contention / (n_cores**2)
    serial = float(rng.uniform(0.0, 0.3)) / n_cores
    signalled = float(rng.uniform(0.1, 0.8))
    io_ms = lock_ms = lock_conflict = think_ms = 0.0
    heavy_connections = int(min(4096, _log_uniform(rng, 4 * n_cores, 4096)))
    if chosen is WorkloadKind.CPU_BOUND:
        io_ms = cpu_ms * float(rng.uniform(0.0, 0.5))
        n_connections = heavy_connections
    elif chosen is WorkloadKind.IO_BOUND:
        io_ms = cpu_ms * _log_uniform(rng, 2.0, 30.0)
        coherency /= 4.0
        n_connections = heavy_connections
    elif chosen is WorkloadKind.LOCK_BOUND:
        io_ms = cpu_ms * float(rng.uniform(0.0, 2.0))
        lock_ms = cpu_ms * float(rng.uniform(0.5, 3.0))
        lock_conflict = _log_uniform(rng, 0.2, 2.0) / n_cores
        coherency *= 2.0
        n_connections = heavy_connections
    else:
        io_ms = cpu_ms * _log_uniform(rng, 0.1, 10.0)
        n_connections = int(_log_uniform(rng, 1, 4096))
        # Think time such that only a share of the clients is busy at any moment.
        busy_share = _log_uniform(rng, 0.005, 0.5)
        request_ms = rounds * (cpu_ms + io_ms)
        think_ms = request_ms * (1.0 - busy_share) / busy_share
        # Light means the server is not saturated: at most ~70% of the cores busy.
        max_busy = 0.7 * n_cores * (cpu_ms + io_ms) / cpu_ms
        n_connections = max(1, min(n_connections, int(max_busy / busy_share) + 1))
    if connections is not None:
        n_connections = connections
    return SimWorkload(
        cores=n_cores,
        connections=n_connections,
        cpu_ms=cpu_ms,
        io_ms=io_ms,
        rounds=rounds,
        think_ms=think_ms,
        signalled_fraction=signalled,
        serial_fraction=serial,
        coherency=coherency,
        lock_ms=lock_ms,
        lock_conflict=lock_conflict,
        write_fraction=float(rng.uniform(0.0, 1.0)),
        switch_penalty=float(rng.uniform(0.01, 0.05)),
        thread_create_ms=_log_uniform(rng, 0.05, 1.0),
        max_size=max_size,
        name=chosen.value,
    )


def random_workload_v2(
    rng: np.random.Generator,
    *,
    kind: WorkloadKind | str | None = None,
    cores: int | None = None,
    max_size: int = 128,
) -> SimWorkload:
    """sim-v2's broad prior: a :func:`random_workload` draw (the same families and ranges) on
    MariaDB's group scheduling (connections bound to groups), where a request is one statement
    with a client turnaround of 0.02–1 ms before the next, a load generator on the same cores
    half the time (0.1–1 × the server's CPU per statement, as sysbench took on the test host),
    and flush stalls (10⁻⁴–10⁻² per statement, 50–2000 ms) on a third of the IO-bound ones."""
    base = random_workload(rng, kind=kind, cores=cores, max_size=max_size)
    turnaround = _log_uniform(rng, 0.02, 1.0)
    client_cpu = 0.0
    if rng.random() < 0.5:
        client_cpu = base.cpu_ms * base.rounds * _log_uniform(rng, 0.1, 1.0)
    stall_rate = stall_ms = 0.0
    if base.name == WorkloadKind.IO_BOUND.value and rng.random() < 1.0 / 3.0:
        stall_rate = _log_uniform(rng, 1e-4, 1e-2)
        stall_ms = _log_uniform(rng, 50.0, 2000.0)
    return dataclasses.replace(
        base,
        think_ms=base.think_ms + turnaround,
        client_cpu_ms=client_cpu,
        group_scheduling=True,
        stall_rate=stall_rate,
        stall_ms=stall_ms,
    )
