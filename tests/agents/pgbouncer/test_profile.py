"""PgBouncer profile arithmetic on hand-made snapshots (counter names of the collectors)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from agents.pgbouncer.collectors import activity_counter
from agents.pgbouncer.profile import (
    build_profile,
    interval,
    restarted_between,
    throughput_cv,
)
from agents.profile import ProfileError
from agents.targets.base import Snapshot
from agents.wire.workload import HOST_CPU_BUSY_EXTRA, LOCK_WAIT_EXTRA, POOL_CONNECTIONS_EXTRA


def snap(
    t: float,
    *,
    xacts: float,
    queries: float | None = None,
    xact_time_s: float = 0.0,
    wait_time_s: float = 0.0,
    cpu: float | None = None,
    clients: float = 10.0,
    waiting: float = 0.0,
    reads: float | None = None,
    writes: float | None = None,
    activity: Mapping[str, float] | None = None,
    uptime: float = 1000.0,
    per_database: Mapping[str, float] | None = None,
    host_busy: float | None = None,
    active_servers: float = 4.0,
) -> Snapshot:
    counters = {
        "pgb_xact_count": xacts,
        "pgb_query_count": queries if queries is not None else 3 * xacts,
        "pgb_xact_time_s": xact_time_s,
        "pgb_query_time_s": xact_time_s / 2,
        "pgb_wait_time_s": wait_time_s,
        "pg_xact_commit": xacts,
        "pg_blks_read": xacts / 10,
        "pg_wal_sync": xacts / 2,
        "pg_uptime_s": uptime,
    }
    if reads is not None and writes is not None:
        counters["pgss_read_calls"] = reads
        counters["pgss_write_calls"] = writes
    for kind, value in (activity or {}).items():
        counters[activity_counter(kind)] = value
    for database, value in (per_database or {}).items():
        counters[f"pgb_xact_count@{database}"] = value
    if host_busy is not None:
        counters["host_busy_s"] = host_busy
    return Snapshot(
        taken_at=t,
        uptime_s=uptime,
        counters=counters,
        gauges={
            "pgb_clients": clients,
            "pgb_cl_waiting": waiting,
            "pgb_sv_active": active_servers,
            "pgb_sv_idle": 1.0,
        },
        cpu_seconds=cpu,
        latency_count=xacts,
        latency_total_s=xact_time_s,
    )


def test_an_interval_is_transactions_and_queries_per_second() -> None:
    first = snap(0.0, xacts=1000, xact_time_s=10.0, cpu=5.0, per_database={"a": 100})
    last = snap(2.0, xacts=3000, xact_time_s=18.0, cpu=6.0, per_database={"a": 700})
    rates = interval(first, last)
    assert rates.tps == 1000.0 and rates.qps == 3000.0
    assert rates.latency_ms == pytest.approx(4.0)  # 8 s over 2000 transactions
    assert rates.cpu_busy == pytest.approx(0.5)
    assert rates.host_cpu_busy is None  # the host's CPU time was not read
    assert rates.connections == 10
    assert interval(first, last, database="a").tps == 300.0
    busy = interval(snap(0.0, xacts=0, host_busy=50.0), snap(2.0, xacts=10, host_busy=53.9))
    assert busy.host_cpu_busy == pytest.approx(1.95)  # every process on the host
    sample = busy.climber_sample({"default_pool_size": 20}, busy.tps)
    assert sample.host_cpu_busy == busy.host_cpu_busy


def test_a_sample_carries_the_share_of_backends_waiting_on_locks() -> None:
    """The climber's lock signal: of 3 backends in a transaction per reading, 2 waited on a
    heavyweight lock (hot rows); select-only waits on none; unsampled, unknown."""
    first = snap(0.0, xacts=0, activity={"samples": 4, "in_xact": 12, "Lock": 8})
    last = snap(2.0, xacts=100, activity={"samples": 6, "in_xact": 18, "Lock": 12})
    rates = interval(first, last)
    assert rates.lock_waits == pytest.approx(2 / 3)
    assert rates.climber_sample({"default_pool_size": 8}, rates.tps).lock_waits == rates.lock_waits
    idle = {"samples": 4, "in_xact": 12, "Lock": 0}
    reads = interval(snap(0.0, xacts=0, activity=idle), snap(2.0, xacts=9, activity=idle))
    assert reads.lock_waits is None  # no backend was in a transaction
    busy = {"samples": 6, "in_xact": 20, "Lock": 0}
    assert (
        interval(snap(0.0, xacts=0, activity=idle), snap(2.0, xacts=9, activity=busy)).lock_waits
        == 0.0
    )
    assert interval(snap(0.0, xacts=0), snap(2.0, xacts=9)).lock_waits is None


def test_a_pool_opening_connections_for_waiting_clients_is_settling() -> None:
    def settling(before: float, after: float, waiting: float) -> bool | None:
        first = snap(0.0, xacts=0, waiting=waiting, active_servers=before)
        return interval(first, snap(2.0, xacts=100, active_servers=after)).settling

    assert settling(20, 26, waiting=90) is True  # grew while clients queued
    assert settling(26, 26, waiting=90) is False  # full: a queue alone is not settling
    assert settling(20, 26, waiting=0) is False  # opened, but nobody was waiting
    assert settling(26, 20, waiting=90) is False  # shrinking takes effect at once
    first, last = snap(0.0, xacts=0), snap(2.0, xacts=100)
    del last.gauges["pgb_cl_waiting"]
    assert interval(first, last).settling is None


def test_a_restart_of_either_server_is_no_sample() -> None:
    first = snap(0.0, xacts=1000)
    assert restarted_between(first, snap(2.0, xacts=10))
    assert restarted_between(first, snap(2.0, xacts=2000, uptime=5.0))
    with pytest.raises(ProfileError, match="restarted"):
        interval(first, snap(2.0, xacts=10))


def test_the_profile_is_per_transaction() -> None:
    quiet = {"samples": 0, "in_xact": 0, "cpu": 0, "Lock": 0, "LWLock": 0}
    busy = {"samples": 10, "in_xact": 60, "cpu": 20, "Lock": 30, "LWLock": 5}
    first = snap(0.0, xacts=0, cpu=0.0, waiting=2.0, reads=0, writes=0, activity=quiet)
    last = snap(
        10.0,
        xacts=2000,
        xact_time_s=12.0,
        wait_time_s=4.0,
        cpu=3.0,
        waiting=2.0,
        reads=1000,
        writes=3000,
        activity=busy,
    )
    profile = build_profile([first, last])
    assert profile.tps == 200.0 and profile.qps == 600.0
    # PgBouncer's 6 ms of transaction time per transaction include the 2 ms queued for a
    # server connection: the connection is held for 4 ms.
    assert profile.latency_ms == pytest.approx(4.0)
    assert profile.extras["client_latency_ms"] == pytest.approx(6.0)
    assert profile.cpu_ms_per_request == pytest.approx(1.5)
    assert profile.wait_ms_per_request == pytest.approx(2.5)
    # Little's law: 200 tps × 4 ms = 0.8 busy server connections, + 2 clients waiting.
    assert profile.active_connections == pytest.approx(2.8)
    assert profile.think_ms == pytest.approx(1000 * (10 - 2.8) / 200)
    assert profile.read_fraction == 0.25
    assert profile.rounds_per_request == 3.0
    assert profile.io_reads_per_txn == pytest.approx(0.1)
    assert profile.fsyncs_per_txn == pytest.approx(0.5)
    assert profile.lock_waits_per_s is None
    # 0.5 backends in LWLock waits on average over 200 tps: 2.5 ms per transaction.
    assert profile.sync_ms_per_request == pytest.approx(2.5)
    assert profile.extras["pg_share_lock"] == pytest.approx(0.5)
    assert profile.extras[LOCK_WAIT_EXTRA] == pytest.approx(15.0)
    # W/S leaves the lock waits out: (2.5 − 15, at least 0) / 1.5.
    assert profile.blocking_coefficient == 0.0
    assert profile.extras["pool_wait_ms_per_txn"] == pytest.approx(2.0)


def test_the_host_cpu_and_the_open_pool_are_in_the_extras() -> None:
    first = snap(0.0, xacts=0, host_busy=100.0)
    last = snap(10.0, xacts=1000, xact_time_s=5.0, host_busy=118.5)
    extras = build_profile([first, last]).extras
    assert extras[HOST_CPU_BUSY_EXTRA] == pytest.approx(1.85)  # cores busy over the window
    assert extras[POOL_CONNECTIONS_EXTRA] == pytest.approx(5.0)  # 4 active + 1 idle
    assert (
        HOST_CPU_BUSY_EXTRA not in build_profile([snap(0.0, xacts=0), snap(10.0, xacts=9)]).extras
    )


def test_unknown_sources_leave_fields_unknown() -> None:
    first = snap(0.0, xacts=0, activity={"samples": 0, "cpu": 0, "in_xact": 0})
    last = snap(10.0, xacts=1000, xact_time_s=5.0, activity={"samples": 10, "cpu": 5, "in_xact": 8})
    profile = build_profile([first, last])
    assert profile.read_fraction is None  # no pg_stat_statements
    # PostgreSQL on another host: the sampled on-CPU backends give S (0.5 / 100 tps).
    assert profile.cpu_ms_per_request == pytest.approx(5.0)
    assert profile.sync_ms_per_request is None
    with pytest.raises(ProfileError, match="two snapshots"):
        build_profile([first])


def test_throughput_cv_is_over_transactions() -> None:
    steady = [snap(float(t), xacts=100.0 * t) for t in range(5)]
    assert throughput_cv(steady) == 0.0
    uneven = [snap(0.0, xacts=0), snap(1.0, xacts=100), snap(2.0, xacts=300)]
    assert throughput_cv(uneven) == pytest.approx(50 / 150)
