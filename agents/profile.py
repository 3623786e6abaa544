"""From counter snapshots to samples (for the climber) and workload profiles (for the service).

Everything here is arithmetic on :class:`~agents.targets.base.Snapshot` values: no I/O,
so it is unit-tested with hand-made snapshots.

How each :class:`~agents.wire.WorkloadProfile` field is estimated (MariaDB / Percona),
over a window from the first to the last snapshot; Δ is last minus first:

- ``window_s``: Δ of the monotonic clock.
- ``connections``: mean over the snapshots of the pool's connections (sum of
  ``THREAD_POOL_GROUPS.CONNECTIONS``), else ``Threads_connected``. Connections on the
  ``extra_port`` (the agent's own) are in neither.
- ``active_connections``: mean of the pool's active threads plus queued requests
  (``ACTIVE_THREADS + QUEUE_LENGTH``), else ``Threads_running`` minus the agent's own
  statement; clipped to ``connections``.
- ``qps``: Δ``Questions`` minus the agent's own statements, over the window.
- ``tps``: Δ(``Com_commit`` + ``Com_rollback``) over the window (autocommit statements
  are not transactions here; ``qps`` covers them).
- ``read_fraction``: Δ``Com_select`` (minus the agent's SELECTs) over Δ of all
  SELECT/INSERT/UPDATE/DELETE/REPLACE counters.
- ``latency_ms``: Δtotal / Δcount of the ``query_response_time`` histogram (the
  agent's own statements are in it too, a small bias at real loads); unknown without
  the plugin. It times a statement's execution only: the time a request waits in the
  pool's queue before a thread picks it up is not in it (on the 2-core test server under
  64 oltp_read_only clients at pool size 1: 0.03 ms per statement, while Little's law on
  the queue length put 1.6 ms of queueing in front of each).
- ``cpu_ms_per_request``: Δ server process CPU seconds (``/proc/<pid>/stat``, user +
  system) over Δ client statements: the service time S. Unknown when the server is not
  on the agent's host.
- ``wait_ms_per_request``: latency minus CPU time per request, not below zero: W, the
  off-CPU wait of a request that holds a thread (IO, row locks, its share of busy CPUs).
  Needs latency and CPU time.
- ``rounds_per_request``: 1 + Δ(thread pool waits of every reason but NET) per
  statement: CPU bursts separated by off-CPU waits.
- ``think_ms``: Little's law on the idle connections: (connections − active) / qps.
- ``io_reads_per_txn``: Δ``Innodb_buffer_pool_reads`` per transaction.
- ``fsyncs_per_txn``: Δ``Innodb_data_fsyncs`` per transaction.
- ``lock_waits_per_s``: Δ``Innodb_row_lock_waits`` over the window.
- ``thread_create_ms``: unknown (the server has no counter for it).
- ``sync_ms_per_request``: Δ of performance_schema's mutex, rw-lock and sx-lock wait
  timers (``wait/synch/%`` but condition variables; the ``sync_wait_s`` counter) per client
  statement; unknown unless performance_schema is ON with those instruments enabled and
  timed. Uncontended acquisitions make a small floor; its growth with concurrency is the
  contention.
- ``extras``: per-second rates of the thread pool statistics and waits by reason, and
  the mean of ``Threadpool_threads``.
Per-transaction fields are unknown when the window saw no transaction.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agents.targets.base import Snapshot
from agents.wire import WorkloadProfile

ThroughputMetric = Literal["transactions", "queries"]

_WRITE_COUNTERS = (
    "Com_insert",
    "Com_insert_select",
    "Com_update",
    "Com_update_multi",
    "Com_delete",
    "Com_delete_multi",
    "Com_replace",
    "Com_replace_select",
)


class ProfileError(ValueError):
    """The snapshots cannot give a profile (too few, or the server restarted in between)."""


def _delta(first: Snapshot, last: Snapshot, name: str) -> float | None:
    if name not in first.counters or name not in last.counters:
        return None
    return max(0.0, last.counters[name] - first.counters[name])


def restarted_between(first: Snapshot, last: Snapshot) -> bool:
    """Whether the server restarted between two snapshots (counters went back)."""
    if last.uptime_s < first.uptime_s:
        return True
    questions = ("Questions",)
    return any(
        name in first.counters and last.counters.get(name, 0.0) < first.counters[name]
        for name in questions
    )


@dataclass(frozen=True, slots=True)
class Interval:
    """Rates between two consecutive snapshots: one sample."""

    duration_s: float
    qps: float
    tps: float
    connections: int
    latency_ms: float | None
    cpu_busy: float | None

    def throughput(self, metric: ThroughputMetric) -> float:
        return self.tps if metric == "transactions" else self.qps


def client_statements(first: Snapshot, last: Snapshot) -> float:
    """Statements the clients sent between the snapshots (the agent's own removed)."""
    questions = _delta(first, last, "Questions") or 0.0
    own = _delta(first, last, "agent_statements") or 0.0
    return max(0.0, questions - own)


def _transactions(first: Snapshot, last: Snapshot) -> float:
    return (_delta(first, last, "Com_commit") or 0.0) + (_delta(first, last, "Com_rollback") or 0.0)


def connections_of(snapshot: Snapshot) -> float:
    if "tp_connections" in snapshot.gauges:
        return snapshot.gauges["tp_connections"]
    return snapshot.gauges.get("Threads_connected", 0.0)


def active_of(snapshot: Snapshot) -> float:
    gauges = snapshot.gauges
    if "tp_active_threads" in gauges:
        return gauges["tp_active_threads"] + gauges.get("tp_queue_length", 0.0)
    return max(0.0, gauges.get("Threads_running", 0.0) - 1.0)


def mean_latency_ms(first: Snapshot, last: Snapshot) -> float | None:
    if (
        first.latency_count is None
        or last.latency_count is None
        or first.latency_total_s is None
        or last.latency_total_s is None
    ):
        return None
    count = last.latency_count - first.latency_count
    total = last.latency_total_s - first.latency_total_s
    if count <= 0 or total < 0:
        return None
    return 1000.0 * total / count


def interval(first: Snapshot, last: Snapshot) -> Interval:
    """The rates between two snapshots; raises :class:`ProfileError` if unusable."""
    duration = last.taken_at - first.taken_at
    if duration <= 0:
        raise ProfileError("snapshots are not in time order")
    if restarted_between(first, last):
        raise ProfileError("the server restarted between the snapshots")
    cpu_busy = None
    if first.cpu_seconds is not None and last.cpu_seconds is not None:
        cpu_busy = max(0.0, last.cpu_seconds - first.cpu_seconds) / duration
    return Interval(
        duration_s=duration,
        qps=client_statements(first, last) / duration,
        tps=_transactions(first, last) / duration,
        connections=round(connections_of(last)),
        latency_ms=mean_latency_ms(first, last),
        cpu_busy=cpu_busy,
    )


def _finite_or_none(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return value


def throughput_cv(snapshots: Sequence[Snapshot]) -> float:
    """Coefficient of variation of the client statements per second between consecutive
    ``snapshots`` (0 when there are fewer than two samples or no statements)."""
    rates = [
        client_statements(a, b) / (b.taken_at - a.taken_at)
        for a, b in itertools.pairwise(snapshots)
        if b.taken_at > a.taken_at and not restarted_between(a, b)
    ]
    if len(rates) < 2:
        return 0.0
    mean = statistics.fmean(rates)
    return statistics.pstdev(rates) / mean if mean > 0 else 0.0


def trailing_window(snapshots: Sequence[Snapshot], window_s: float) -> Sequence[Snapshot]:
    """The shortest tail of ``snapshots`` that spans at least ``window_s`` (all of them when
    they span less)."""
    last = snapshots[-1].taken_at
    for start in range(len(snapshots) - 1, -1, -1):
        if last - snapshots[start].taken_at >= window_s:
            return snapshots[start:]
    return snapshots


def build_profile(snapshots: Sequence[Snapshot]) -> WorkloadProfile:
    """The workload profile over ``snapshots`` (at least two, in time order)."""
    if len(snapshots) < 2:
        raise ProfileError("a profile needs at least two snapshots")
    first, last = snapshots[0], snapshots[-1]
    rates = interval(first, last)
    window = rates.duration_s
    statements = client_statements(first, last)
    transactions = _transactions(first, last)

    connections = statistics.fmean(connections_of(s) for s in snapshots)
    active = min(connections, statistics.fmean(active_of(s) for s in snapshots))

    reads = max(
        0.0,
        (_delta(first, last, "Com_select") or 0.0) - (_delta(first, last, "agent_selects") or 0.0),
    )
    writes = sum(_delta(first, last, name) or 0.0 for name in _WRITE_COUNTERS)
    read_fraction = reads / (reads + writes) if reads + writes > 0 else None

    latency = rates.latency_ms
    cpu_ms = None
    if first.cpu_seconds is not None and last.cpu_seconds is not None and statements > 0:
        cpu_ms = 1000.0 * max(0.0, last.cpu_seconds - first.cpu_seconds) / statements
    qps = rates.qps
    # The latency is execution time (the pool's queue is not in it): W is what is left
    # after the CPU time.
    wait_ms = max(0.0, latency - cpu_ms) if latency is not None and cpu_ms is not None else None

    waits = [
        _delta(first, last, name) or 0.0
        for name in last.counters
        if name.startswith("tp_wait_") and name != "tp_wait_net"
    ]
    rounds = 1.0 + sum(waits) / statements if waits and statements > 0 else None

    think_ms = 1000.0 * max(0.0, connections - active) / qps if qps > 0 else None

    def per_txn(name: str) -> float | None:
        delta = _delta(first, last, name)
        return delta / transactions if delta is not None and transactions > 0 else None

    lock_waits = _delta(first, last, "Innodb_row_lock_waits")
    sync_s = _delta(first, last, "sync_wait_s")
    sync_ms = 1000.0 * sync_s / statements if sync_s is not None and statements > 0 else None
    extras: dict[str, float] = {}
    for name in last.counters:
        if name.startswith("tp_"):
            delta = _delta(first, last, name)
            if delta is not None:
                extras[f"{name}_per_s"] = delta / window
    threads = [
        s.gauges["Threadpool_threads"] for s in snapshots if "Threadpool_threads" in s.gauges
    ]
    if threads:
        extras["threadpool_threads_mean"] = statistics.fmean(threads)
    if rates.cpu_busy is not None:
        extras["server_cpu_busy"] = rates.cpu_busy

    return WorkloadProfile(
        window_s=window,
        connections=round(connections),
        active_connections=active,
        qps=qps,
        tps=transactions / window,
        read_fraction=read_fraction,
        latency_ms=_finite_or_none(latency),
        cpu_ms_per_request=_finite_or_none(cpu_ms),
        wait_ms_per_request=_finite_or_none(wait_ms),
        rounds_per_request=_finite_or_none(rounds),
        think_ms=_finite_or_none(think_ms),
        io_reads_per_txn=per_txn("Innodb_buffer_pool_reads"),
        fsyncs_per_txn=per_txn("Innodb_data_fsyncs"),
        lock_waits_per_s=lock_waits / window if lock_waits is not None else None,
        thread_create_ms=None,
        sync_ms_per_request=_finite_or_none(sync_ms),
        extras=extras,
    )


def workload_changed(
    reference: WorkloadProfile, current: Interval, *, threshold: float = 0.2
) -> bool:
    """Whether ``current`` looks like another workload than ``reference``: connections
    moved by more than ``threshold`` (relative, and by at least 2)."""
    base = float(reference.connections)
    moved = abs(current.connections - base)
    return moved >= 2 and moved > threshold * max(base, 1.0)
