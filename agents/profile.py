"""From counter snapshots to samples (for the climber) and workload profiles (for the service).

Everything here is arithmetic on :class:`~agents.targets.base.Snapshot` values: no I/O,
so it is unit-tested with hand-made snapshots. How each profile field is estimated, and
why: docs/profile.md.
"""

from __future__ import annotations

import itertools
import logging
import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from agents.climber import Sample
from agents.targets.base import Snapshot
from agents.wire import WorkloadProfile

logger = logging.getLogger(__name__)

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


def counter_delta(first: Snapshot, last: Snapshot, name: str) -> float | None:
    """How much the cumulative counter ``name`` grew between two snapshots (None when one
    of them lacks it; never negative)."""
    if name not in first.counters or name not in last.counters:
        return None
    return max(0.0, last.counters[name] - first.counters[name])


def counters_went_back(first: Snapshot, last: Snapshot, names: Iterable[str]) -> bool:
    """Whether one of the cumulative counters ``names`` is lower in ``last``: a restart."""
    return any(
        name in first.counters and last.counters.get(name, 0.0) < first.counters[name]
        for name in names
    )


def restarted_between(first: Snapshot, last: Snapshot) -> bool:
    """Whether the server restarted between two snapshots (counters went back)."""
    return last.uptime_s < first.uptime_s or counters_went_back(first, last, ("Questions",))


def cpu_busy(first: Snapshot, last: Snapshot) -> float | None:
    """The server's CPU use between two snapshots, in cores (None when unknown)."""
    duration = last.taken_at - first.taken_at
    if first.cpu_seconds is None or last.cpu_seconds is None or duration <= 0:
        return None
    return max(0.0, last.cpu_seconds - first.cpu_seconds) / duration


@dataclass(frozen=True, slots=True)
class Interval:
    """Rates between two consecutive snapshots: one sample."""

    duration_s: float
    qps: float
    tps: float
    connections: int
    latency_ms: float | None
    cpu_busy: float | None
    #: Cores busy on the whole host (None: not read, or the server is remote).
    host_cpu_busy: float | None = None
    #: Whether the pool stalled in the interval (None: the engine cannot tell).
    stalled: bool | None = None
    #: Whether the last change was still taking effect (None: the engine cannot tell).
    settling: bool | None = None
    #: How much statements queued on row locks (:attr:`Sample.lock_waits`; None: the
    #: engine cannot tell).
    lock_waits: float | None = None
    #: How often per second the pool's timer found a group stalled and woke or created a
    #: thread for it (MariaDB: ``THREAD_POOL_STATS.WAKES_DUE_TO_STALL``; None: unknown).
    #: The sweep keeps it per sample; the climber does not read it: it grows with the
    #: pool, not where a larger one would gain (docs/climber.md, "Search", the far end).
    stall_wakes: float | None = None

    def throughput(self, metric: ThroughputMetric) -> float:
        return metric_rate(self.tps, self.qps, metric)

    def climber_sample(self, knobs: Mapping[str, int], throughput: float) -> Sample:
        """This interval as the climber's sample at ``knobs``."""
        return Sample(
            throughput=throughput,
            connections=self.connections,
            latency_ms=self.latency_ms,
            knobs=dict(knobs),
            cpu_busy=self.cpu_busy,
            host_cpu_busy=self.host_cpu_busy,
            stalled=self.stalled,
            settling=self.settling,
            lock_waits=self.lock_waits,
        )


def client_statements(first: Snapshot, last: Snapshot) -> float:
    """Statements the clients sent between the snapshots (the agent's own removed)."""
    questions = counter_delta(first, last, "Questions") or 0.0
    own = counter_delta(first, last, "agent_statements") or 0.0
    return max(0.0, questions - own)


def _transactions(first: Snapshot, last: Snapshot) -> float:
    return (counter_delta(first, last, "Com_commit") or 0.0) + (
        counter_delta(first, last, "Com_rollback") or 0.0
    )


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


#: Counter and gauge names as agents.collectors stores them.
STALLS_COUNTER = "tp_stalls"
STALLED_GROUPS_GAUGE = "tp_stalled_groups"
STALL_WAKES_COUNTER = "tp_wakes_due_to_stall"


def pool_stalled(first: Snapshot, last: Snapshot) -> bool | None:
    """Whether MariaDB's pool stalled between the two snapshots (a statement ran past
    ``thread_pool_stall_limit``: ``THREAD_POOL_STATS.STALLS`` grew, or a group is
    ``IS_STALLED`` now); None when the counters are missing. The climber sets such a sample
    aside while it is an outlier of its tuple (docs/climber.md, "Evidence")."""
    before = first.counters.get(STALLS_COUNTER)
    after = last.counters.get(STALLS_COUNTER)
    stalled_now = last.gauges.get(STALLED_GROUPS_GAUGE)
    if before is None or after is None:
        return None if stalled_now is None else stalled_now > 0
    return after > before or (stalled_now is not None and stalled_now > 0)


def stall_wakes_per_s(first: Snapshot, last: Snapshot) -> float | None:
    """How often per second MariaDB's pool timer found a group stalled between the
    snapshots and woke or created a thread for it (``THREAD_POOL_STATS``
    ``WAKES_DUE_TO_STALL``); None when the counter is missing."""
    wakes = counter_delta(first, last, STALL_WAKES_COUNTER)
    duration = last.taken_at - first.taken_at
    if wakes is None or duration <= 0:
        return None
    return wakes / duration


def lock_waits_per_statement(first: Snapshot, last: Snapshot) -> float | None:
    """InnoDB row-lock waits per client statement between the snapshots (None: unknown,
    or no statement ran)."""
    waits = counter_delta(first, last, "Innodb_row_lock_waits")
    statements = client_statements(first, last)
    return waits / statements if waits is not None and statements > 0 else None


def interval(first: Snapshot, last: Snapshot) -> Interval:
    """The rates between two snapshots; raises :class:`ProfileError` if unusable."""
    duration = last.taken_at - first.taken_at
    if duration <= 0:
        raise ProfileError("snapshots are not in time order")
    if restarted_between(first, last):
        raise ProfileError("the server restarted between the snapshots")
    return Interval(
        duration_s=duration,
        qps=client_statements(first, last) / duration,
        tps=_transactions(first, last) / duration,
        connections=round(connections_of(last)),
        latency_ms=mean_latency_ms(first, last),
        cpu_busy=cpu_busy(first, last),
        stalled=pool_stalled(first, last),
        lock_waits=lock_waits_per_statement(first, last),
        stall_wakes=stall_wakes_per_s(first, last),
    )


def finite_or_none(value: float | None) -> float | None:
    """``value``, or None when it is unknown, infinite or NaN (the wire takes no NaN)."""
    if value is None or not math.isfinite(value):
        return None
    return value


SnapshotCount = Callable[[Snapshot, Snapshot], float]
RestartCheck = Callable[[Snapshot, Snapshot], bool]


def profile_ends(snapshots: Sequence[Snapshot]) -> tuple[Snapshot, Snapshot]:
    """The first and last of ``snapshots``: a profile needs at least two (a ProfileError)."""
    if len(snapshots) < 2:
        raise ProfileError("a profile needs at least two snapshots")
    return snapshots[0], snapshots[-1]


def off_cpu_wait_ms(latency_ms: float | None, cpu_ms: float | None) -> float | None:
    """W, the off-CPU wait per request: what is left of the latency after the CPU time."""
    if latency_ms is None or cpu_ms is None:
        return None
    return max(0.0, latency_ms - cpu_ms)


def think_time_ms(connections: float, active: float, rate: float) -> float | None:
    """Time a client spends between requests, by Little's law: the idle connections over
    the request rate (``rate`` per second)."""
    return 1000.0 * max(0.0, connections - active) / rate if rate > 0 else None


def rate_cv(snapshots: Sequence[Snapshot], count: SnapshotCount, restarted: RestartCheck) -> float:
    """Coefficient of variation of ``count(a, b)`` per second between consecutive
    ``snapshots``, restarts left out (0 with fewer than two rates or a zero mean)."""
    rates = [
        count(a, b) / (b.taken_at - a.taken_at)
        for a, b in itertools.pairwise(snapshots)
        if b.taken_at > a.taken_at and not restarted(a, b)
    ]
    if len(rates) < 2:
        return 0.0
    mean = statistics.fmean(rates)
    return statistics.pstdev(rates) / mean if mean > 0 else 0.0


def throughput_cv(snapshots: Sequence[Snapshot]) -> float:
    """Coefficient of variation of the client statements per second between consecutive
    ``snapshots`` (0 when there are fewer than two samples or no statements)."""
    return rate_cv(snapshots, client_statements, restarted_between)


def trailing_window(snapshots: Sequence[Snapshot], window_s: float) -> Sequence[Snapshot]:
    """The shortest tail of ``snapshots`` that spans at least ``window_s`` (all of them when
    they span less)."""
    last = snapshots[-1].taken_at
    for start in range(len(snapshots) - 1, -1, -1):
        if last - snapshots[start].taken_at >= window_s:
            return snapshots[start:]
    return snapshots


def profiling_window(
    snapshots: Sequence[Snapshot],
    *,
    window_s: float,
    longest_s: float,
    steady_cv: float,
    sample_period_s: float,
    cv: Callable[[Sequence[Snapshot]], float] = throughput_cv,
) -> Sequence[Snapshot] | None:
    """The snapshots to profile over, or None to keep observing: the last ``window_s`` once
    their throughput is steady (CV at most ``steady_cv``), else all of them after
    ``longest_s``. A profile taken in a stall (a flush storm, a backup) would describe a
    workload that is not there. ``cv``: the engine's :func:`throughput_cv`."""
    if len(snapshots) < 2:
        return None
    observed = snapshots[-1].taken_at - snapshots[0].taken_at
    if observed < window_s:
        return None
    window = trailing_window(snapshots, window_s)
    variation = cv(window)
    if variation > steady_cv:
        if observed < longest_s:
            return None
        logger.warning(
            "throughput still unsteady after %.0fs (variation %.2f of the mean over the "
            "last %.0fs): profiling over all of it",
            observed,
            variation,
            window_s,
        )
        return snapshots
    if observed > window_s + sample_period_s:
        logger.info("throughput steady after %.0fs: profiling the last %.0fs", observed, window_s)
    return window


def metric_rate(tps: float, qps: float, metric: ThroughputMetric) -> float:
    """The rate the climb is measured in: transactions or queries per second."""
    return tps if metric == "transactions" else qps


def climb_metric(configured: ThroughputMetric, profile: WorkloadProfile) -> ThroughputMetric:
    """The configured metric, except that a workload without transactions (autocommit
    statements only: Com_commit does not move) is climbed on queries per second."""
    if configured == "transactions" and profile.tps <= 0 < profile.qps:
        logger.warning(
            "no transactions in the profile (autocommit workload): climbing on "
            "queries per second instead"
        )
        return "queries"
    return configured


def build_profile(snapshots: Sequence[Snapshot]) -> WorkloadProfile:
    """The workload profile over ``snapshots`` (at least two, in time order)."""
    first, last = profile_ends(snapshots)
    rates = interval(first, last)
    window = rates.duration_s
    statements = client_statements(first, last)
    transactions = _transactions(first, last)

    connections = statistics.fmean(connections_of(s) for s in snapshots)
    active = min(connections, statistics.fmean(active_of(s) for s in snapshots))

    reads = max(
        0.0,
        (counter_delta(first, last, "Com_select") or 0.0)
        - (counter_delta(first, last, "agent_selects") or 0.0),
    )
    writes = sum(counter_delta(first, last, name) or 0.0 for name in _WRITE_COUNTERS)
    read_fraction = reads / (reads + writes) if reads + writes > 0 else None

    latency = rates.latency_ms
    cpu_ms = None
    if first.cpu_seconds is not None and last.cpu_seconds is not None and statements > 0:
        cpu_ms = 1000.0 * max(0.0, last.cpu_seconds - first.cpu_seconds) / statements
    qps = rates.qps
    # The latency is execution time (the pool's queue is not in it): W is what is left
    # after the CPU time.
    wait_ms = off_cpu_wait_ms(latency, cpu_ms)

    waits = [
        counter_delta(first, last, name) or 0.0
        for name in last.counters
        if name.startswith("tp_wait_") and name != "tp_wait_net"
    ]
    rounds = 1.0 + sum(waits) / statements if waits and statements > 0 else None

    think_ms = think_time_ms(connections, active, qps)

    def per_txn(name: str) -> float | None:
        delta = counter_delta(first, last, name)
        return delta / transactions if delta is not None and transactions > 0 else None

    lock_waits = counter_delta(first, last, "Innodb_row_lock_waits")
    sync_s = counter_delta(first, last, "sync_wait_s")
    sync_ms = 1000.0 * sync_s / statements if sync_s is not None and statements > 0 else None
    extras: dict[str, float] = {}
    for name in last.counters:
        if name.startswith("tp_"):
            delta = counter_delta(first, last, name)
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
        latency_ms=finite_or_none(latency),
        cpu_ms_per_request=finite_or_none(cpu_ms),
        wait_ms_per_request=finite_or_none(wait_ms),
        rounds_per_request=finite_or_none(rounds),
        think_ms=finite_or_none(think_ms),
        io_reads_per_txn=per_txn("Innodb_buffer_pool_reads"),
        fsyncs_per_txn=per_txn("Innodb_data_fsyncs"),
        lock_waits_per_s=lock_waits / window if lock_waits is not None else None,
        thread_create_ms=None,
        sync_ms_per_request=finite_or_none(sync_ms),
        extras=extras,
    )


def describe_profile(profile: WorkloadProfile) -> str:
    """The main figures of ``profile`` for a log line."""

    def known(value: float | None) -> str:
        return "unknown" if value is None else f"{value:.2f}"

    return (
        f"{profile.connections} connections ({profile.active_connections:.1f} active), "
        f"{profile.qps:.0f} qps, {profile.tps:.0f} tps, latency {known(profile.latency_ms)} ms, "
        f"cpu {known(profile.cpu_ms_per_request)} ms/request"
    )


def workload_changed(
    reference: WorkloadProfile, current: Interval, *, threshold: float = 0.2
) -> bool:
    """Whether ``current`` looks like another workload than ``reference``: connections
    moved by more than ``threshold`` (relative, and by at least 2)."""
    return _connections_moved(float(reference.connections), current.connections, threshold)


def change_passed(
    before: WorkloadProfile,
    held_levels: Sequence[float],
    after: WorkloadProfile,
    metric: ThroughputMetric,
    *,
    threshold: float = 0.2,
) -> bool:
    """A change the climber saw while holding did not last: the steady window profiled
    after it has the same clients (connections within ``threshold``, as
    :func:`workload_changed`) and runs at the held tuple within ``threshold`` of the median
    of ``held_levels``, the climb's last samples there (a checkpoint's or the host's dip,
    not another workload). The climb then goes on from the held tuple, measured on this
    workload, instead of from a recommendation (docs/agent.md, "The loop")."""
    if not held_levels or _connections_moved(
        float(before.connections), after.connections, threshold
    ):
        return False
    level = statistics.median(held_levels)
    throughput = metric_rate(after.tps, after.qps, metric)
    if min(throughput, level) <= 0:
        return False
    return abs(math.log(throughput / level)) <= math.log1p(threshold)


def _connections_moved(before: float, after: float, threshold: float) -> bool:
    moved = abs(after - before)
    return moved >= 2 and moved > threshold * max(before, 1.0)
