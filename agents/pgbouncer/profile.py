"""PgBouncer snapshots → samples (for the climber) and workload profiles (for the service).

The same functions as :mod:`agents.profile` (MariaDB) with the same signatures —
``interval``, ``build_profile``, ``throughput_cv``, ``restarted_between`` — over the counters
of :mod:`agents.pgbouncer.collectors`: the agent picks the module by engine. A request is a
transaction (PgBouncer's unit of pooling in transaction mode), so throughput is
transactions per second and every "per request" field is per transaction. How each field
is estimated, and why, is in docs/pgbouncer.md.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

from agents.pgbouncer.collectors import WAIT_CLASSES, activity_counter
from agents.profile import (
    Interval,
    ProfileError,
    counter_delta,
    counters_went_back,
    cpu_busy,
    finite_or_none,
    mean_latency_ms,
    off_cpu_wait_ms,
    profile_ends,
    rate_cv,
    think_time_ms,
)
from agents.targets.base import Snapshot
from agents.wire import WorkloadProfile
from agents.wire.workload import HOST_CPU_BUSY_EXTRA, POOL_CONNECTIONS_EXTRA

#: Counters that only grow while both servers run: one going back means a restart.
_MONOTONIC = ("pgb_xact_count", "pgb_query_count", "pg_xact_commit", "pg_uptime_s")


def _scoped(name: str, database: str | None) -> str:
    return f"{name}@{database}" if database else name


def restarted_between(first: Snapshot, last: Snapshot) -> bool:
    """Whether PgBouncer or PostgreSQL restarted between two snapshots."""
    return counters_went_back(first, last, _MONOTONIC)


def transactions(first: Snapshot, last: Snapshot, *, database: str | None = None) -> float:
    """Transactions PgBouncer pooled between the snapshots (of one database, or all tuned)."""
    return counter_delta(first, last, _scoped("pgb_xact_count", database)) or 0.0


def clients_of(snapshot: Snapshot) -> float:
    return snapshot.gauges.get("pgb_clients", 0.0)


def interval(first: Snapshot, last: Snapshot, *, database: str | None = None) -> Interval:
    """The rates between two snapshots; with ``database``, that pool's throughput only."""
    duration = last.taken_at - first.taken_at
    if duration <= 0:
        raise ProfileError("snapshots are not in time order")
    if restarted_between(first, last):
        raise ProfileError("PgBouncer or PostgreSQL restarted between the snapshots")
    queries = counter_delta(first, last, _scoped("pgb_query_count", database)) or 0.0
    return Interval(
        duration_s=duration,
        qps=queries / duration,
        tps=transactions(first, last, database=database) / duration,
        connections=round(clients_of(last)),
        latency_ms=mean_latency_ms(first, last) if database is None else None,
        cpu_busy=cpu_busy(first, last),
        host_cpu_busy=host_cpu_busy(first, last),
        settling=pool_opening(first, last),
        lock_waits=lock_share(first, last),
    )


def lock_share(first: Snapshot, last: Snapshot) -> float | None:
    """The share of the pools' backends in a transaction that waited on a heavyweight lock
    (``pg_stat_activity`` wait class ``Lock``: row and transaction locks) between the
    snapshots: PgBouncer's reading of statements queueing on row locks, the climber's lock
    signal (None when pg_stat_activity was not sampled; docs/pgbouncer.md)."""
    return _Activity(first, last).share("Lock")


def host_cpu_busy(first: Snapshot, last: Snapshot) -> float | None:
    """The cores busy on PostgreSQL's host between the snapshots, every process counted
    (None when the host's CPU time was not read: PostgreSQL on another host)."""
    duration = last.taken_at - first.taken_at
    busy = counter_delta(first, last, "host_busy_s")
    return busy / duration if busy is not None and duration > 0 else None


def pool_opening(first: Snapshot, last: Snapshot) -> bool | None:
    """Whether the pools were still opening server connections for waiting clients between
    the snapshots: clients waited at either end and more connections were open at the end.
    PgBouncer opens a pool's connections a few at a time, so a pool that grew reaches its
    size only after seconds to tens of seconds, and until then a sample measures a smaller pool
    (docs/pgbouncer.md, "A pool opens slowly"). Logins that fail open nothing and do not
    count. None when ``SHOW POOLS`` was not read."""
    if "pgb_cl_waiting" not in last.gauges:
        return None
    waited = max(first.gauges.get("pgb_cl_waiting", 0.0), last.gauges["pgb_cl_waiting"]) > 0
    return waited and (_open_servers(last) or 0.0) > (_open_servers(first) or 0.0)


def _open_servers(snapshot: Snapshot) -> float | None:
    return open_server_connections([snapshot.gauges.get(f"pgb_{s}") for s in OPEN_SERVER_STATES])


def throughput_cv(snapshots: Sequence[Snapshot]) -> float:
    """Coefficient of variation of the transactions per second between consecutive
    ``snapshots`` (0 with fewer than two samples or no transactions)."""
    return rate_cv(snapshots, transactions, restarted_between)


class _Activity:
    """Means of the pg_stat_activity samples over a window (None when not sampled)."""

    def __init__(self, first: Snapshot, last: Snapshot) -> None:
        self._first, self._last = first, last
        self.samples = counter_delta(first, last, activity_counter("samples")) or 0.0

    def mean(self, kind: str) -> float | None:
        if self.samples <= 0:
            return None
        delta = counter_delta(self._first, self._last, activity_counter(kind))
        return delta / self.samples if delta is not None else None

    def share(self, kind: str) -> float | None:
        """The share of the backends in a transaction that were in ``kind`` (None when none
        was sampled in one)."""
        in_xact, backends = self.mean("in_xact"), self.mean(kind)
        return backends / in_xact if in_xact and backends is not None else None


def _gauge_mean(snapshots: Sequence[Snapshot], name: str) -> float | None:
    values = [s.gauges[name] for s in snapshots if name in s.gauges]
    return statistics.fmean(values) if values else None


#: The states of a server connection that is open in a pool (logging in aside).
OPEN_SERVER_STATES = ("sv_active", "sv_idle", "sv_used")


def open_server_connections(counts: Sequence[float | None]) -> float | None:
    """Server connections open: the sum of the :data:`OPEN_SERVER_STATES` counts (a state
    not read counts 0), or None when none was read."""
    if all(count is None for count in counts):
        return None
    return sum(count or 0.0 for count in counts)


def held_latency_ms(client_ms: float | None, pool_wait_ms: float | None) -> float | None:
    """The time a transaction holds its server connection: PgBouncer's transaction time
    (which starts when the client's first query arrives, so it includes the queue for a
    connection) less the pool wait per transaction. What a pool slot serves, and the
    profile's latency (docs/pgbouncer.md, "latency_ms")."""
    if client_ms is None:
        return None
    return max(0.0, client_ms - (pool_wait_ms or 0.0))


def busy_connections(
    *, tps: float, latency_ms: float | None, connections: float, waiting: float
) -> float | None:
    """Clients with a transaction under way, by Little's law on PgBouncer's clock: server
    connections busy (tps × held latency) plus clients queued for one, at most all."""
    if latency_ms is None:
        return None
    return min(connections, tps * latency_ms / 1000.0 + waiting)


def build_profile(snapshots: Sequence[Snapshot]) -> WorkloadProfile:
    """The workload profile over ``snapshots`` (at least two, in time order)."""
    first, last = profile_ends(snapshots)
    rates = interval(first, last)
    window = rates.duration_s
    xacts = transactions(first, last)
    activity = _Activity(first, last)

    def per_txn(delta: float | None, scale: float = 1.0) -> float | None:
        return scale * delta / xacts if delta is not None and xacts > 0 else None

    def little_ms(kind: str) -> float | None:
        """Time per transaction in ``kind`` by Little's law: mean backends in it / tps."""
        backends = activity.mean(kind)
        return 1000.0 * backends / rates.tps if backends is not None and rates.tps > 0 else None

    connections = statistics.fmean(clients_of(s) for s in snapshots)
    waiting = _gauge_mean(snapshots, "pgb_cl_waiting") or 0.0
    pool_wait_ms = per_txn(counter_delta(first, last, "pgb_wait_time_s"), 1000.0)
    latency = held_latency_ms(rates.latency_ms, pool_wait_ms)
    active = busy_connections(
        tps=rates.tps, latency_ms=latency, connections=connections, waiting=waiting
    )
    if active is None:
        in_xact = activity.mean("in_xact") or _gauge_mean(snapshots, "pgb_sv_active") or 0.0
        active = min(connections, in_xact + waiting)

    reads = counter_delta(first, last, "pgss_read_calls")
    writes = counter_delta(first, last, "pgss_write_calls")
    read_fraction = None
    if reads is not None and writes is not None and reads + writes > 0:
        read_fraction = reads / (reads + writes)

    cpu_ms = None
    if first.cpu_seconds is not None and last.cpu_seconds is not None:
        cpu_ms = per_txn(max(0.0, last.cpu_seconds - first.cpu_seconds), 1000.0)
    if cpu_ms is None:  # PostgreSQL on another host: sampled on-CPU backends
        cpu_ms = little_ms("cpu")
    wait_ms = off_cpu_wait_ms(latency, cpu_ms)
    queries = counter_delta(first, last, "pgb_query_count")
    rounds = queries / xacts if queries is not None and xacts > 0 else None
    think_ms = think_time_ms(connections, active, rates.tps)

    extras = _extras(snapshots, window=window, xacts=xacts, activity=activity, little_ms=little_ms)
    if rates.latency_ms is not None:
        extras["client_latency_ms"] = rates.latency_ms
    if rates.cpu_busy is not None:
        extras["server_cpu_busy"] = rates.cpu_busy

    return WorkloadProfile(
        window_s=window,
        connections=round(connections),
        active_connections=active,
        qps=rates.qps,
        tps=rates.tps,
        read_fraction=read_fraction,
        latency_ms=finite_or_none(latency),
        cpu_ms_per_request=finite_or_none(cpu_ms),
        wait_ms_per_request=finite_or_none(wait_ms),
        rounds_per_request=finite_or_none(rounds),
        think_ms=finite_or_none(think_ms),
        io_reads_per_txn=per_txn(counter_delta(first, last, "pg_blks_read")),
        fsyncs_per_txn=per_txn(counter_delta(first, last, "pg_wal_sync")),
        lock_waits_per_s=None,
        thread_create_ms=None,
        sync_ms_per_request=finite_or_none(little_ms("LWLock")),
        extras=extras,
    )


def _extras(
    snapshots: Sequence[Snapshot],
    *,
    window: float,
    xacts: float,
    activity: _Activity,
    little_ms: Callable[[str], float | None],
) -> dict[str, float]:
    """Engine-specific figures: the pool's queue, server connection states, wait shares."""
    first, last = snapshots[0], snapshots[-1]
    extras: dict[str, float] = {}

    def put(name: str, value: float | None) -> None:
        finite = finite_or_none(value)
        if finite is not None:
            extras[name] = finite

    if xacts > 0:
        put(
            "pool_wait_ms_per_txn",
            1000.0 * (counter_delta(first, last, "pgb_wait_time_s") or 0.0) / xacts,
        )
    queries = counter_delta(first, last, "pgb_query_count") or 0.0
    if queries > 0:
        put("query_ms", 1000.0 * (counter_delta(first, last, "pgb_query_time_s") or 0.0) / queries)
    for gauge in ("pgb_cl_waiting", "pgb_sv_active", "pgb_sv_idle", "pgb_sv_used", "pgb_sv_login"):
        put(f"{gauge.removeprefix('pgb_')}_mean", _gauge_mean(snapshots, gauge))
    put(
        POOL_CONNECTIONS_EXTRA,
        open_server_connections([_gauge_mean(snapshots, f"pgb_{s}") for s in OPEN_SERVER_STATES]),
    )
    put("maxwait_s_max", max((s.gauges.get("pgb_maxwait_s", 0.0) for s in snapshots), default=0.0))
    for kind in ("cpu", "idle_in_xact", *WAIT_CLASSES, "other"):
        put(f"pg_share_{kind.lower()}", activity.share(kind))
    put("backends_in_xact_mean", activity.mean("in_xact"))
    for kind, name in (
        ("Lock", "lock"),
        ("IO", "io"),
        ("Timeout", "timeout"),
        ("Client", "client"),
    ):
        put(f"{name}_wait_ms_per_txn", little_ms(kind))
    put("idle_in_xact_ms_per_txn", little_ms("idle_in_xact"))
    pg_xacts = (counter_delta(first, last, "pg_xact_commit") or 0.0) + (
        counter_delta(first, last, "pg_xact_rollback") or 0.0
    )
    own = counter_delta(first, last, "agent_pg_statements") or 0.0
    put("pg_tps", max(0.0, pg_xacts - own) / window)
    hits = counter_delta(first, last, "pg_blks_hit")
    reads = counter_delta(first, last, "pg_blks_read")
    if hits is not None and reads is not None and hits + reads > 0:
        put("pg_blks_hit_ratio", hits / (hits + reads))
    put("pg_deadlocks_per_s", (counter_delta(first, last, "pg_deadlocks") or 0.0) / window)
    if xacts > 0:
        put("wal_bytes_per_txn", (counter_delta(first, last, "pg_wal_bytes") or 0.0) / xacts)
        put("temp_bytes_per_txn", (counter_delta(first, last, "pg_temp_bytes") or 0.0) / xacts)
    calls = counter_delta(first, last, "pgss_calls")
    if calls:
        put(
            "statement_exec_ms",
            1000.0 * (counter_delta(first, last, "pgss_exec_time_s") or 0.0) / calls,
        )
    if first.counters.get("pgbouncer_cpu_s") is not None and "pgbouncer_cpu_s" in last.counters:
        put("pgbouncer_cpu_busy", (counter_delta(first, last, "pgbouncer_cpu_s") or 0.0) / window)
    host_busy = host_cpu_busy(first, last)
    if host_busy is not None:
        put(HOST_CPU_BUSY_EXTRA, host_busy)
    return extras
