"""One pool's snapshot, the state file's names for pool sizes, and the engine's profiler."""

from __future__ import annotations

import pytest

from agents.knobs import Engine
from agents.pgbouncer import profile as pgbouncer_profile
from agents.pgbouncer.saved import pool_key, split_saved
from agents.pgbouncer.view import pool_snapshot
from agents.profilers import MARIADB, PGBOUNCER, profiler_for, target_profiler
from agents.targets.base import Snapshot
from agents.targets.simulated import SimulatedTarget


def two_pools(t: float, *, a: float, b: float) -> Snapshot:
    """Totals of databases a and b, with each one's own counters and pool gauges."""
    counters = {
        "pgb_xact_count": a + b,
        "pgb_query_count": 2 * (a + b),
        "pgb_xact_time_s": (a + b) / 100,
        "pgb_wait_time_s": 0.0,
        "pg_uptime_s": 100.0,
        "pgb_xact_count@a": a,
        "pgb_query_count@a": 2 * a,
        "pgb_xact_time_s@a": a / 100,
        "pgb_wait_time_s@a": 0.0,
        "pgb_xact_count@b": b,
        "pgb_query_count@b": 3 * b,
        "pgb_xact_time_s@b": b / 50,
        "pgb_wait_time_s@b": b / 100,
    }
    gauges = {
        "pgb_clients": 30.0,
        "pgb_cl_active": 24.0,
        "pgb_cl_waiting": 6.0,
        "pgb_cl_active@a/app": 8.0,
        "pgb_cl_waiting@a/app": 2.0,
        "pgb_sv_active@a/app": 8.0,
        "pgb_cl_active@b/app": 10.0,
        "pgb_cl_active@b/report": 6.0,
        "pgb_cl_waiting@b/app": 4.0,
        "pgb_cl_waiting@b/report": 0.0,
        "pgb_sv_active@b/app": 10.0,
        "pgb_sv_active@b/report": 6.0,
    }
    return Snapshot(
        taken_at=t,
        uptime_s=100.0,
        counters=counters,
        gauges=gauges,
        cpu_seconds=t / 2,
        latency_count=a + b,
        latency_total_s=(a + b) / 100,
    )


def test_a_pool_snapshot_climbs_on_that_pools_own_transactions() -> None:
    first, last = two_pools(0.0, a=0, b=0), two_pools(2.0, a=400, b=1000)
    whole = pgbouncer_profile.interval(first, last)
    a = pgbouncer_profile.interval(pool_snapshot(first, "a"), pool_snapshot(last, "a"))
    b = pgbouncer_profile.interval(pool_snapshot(first, "b"), pool_snapshot(last, "b"))
    assert whole.tps == 700.0
    assert (a.tps, b.tps) == (200.0, 500.0)
    assert (a.qps, b.qps) == (400.0, 1500.0)
    assert (a.connections, b.connections) == (10, 20)  # active + waiting of its user pools
    assert a.latency_ms == pytest.approx(10.0) and b.latency_ms == pytest.approx(20.0)
    # The server's CPU is shared by the pools: it stays the server's.
    assert a.cpu_busy == whole.cpu_busy == 0.5
    assert pool_snapshot(last, "b").gauges["pgb_pools"] == 2.0


def test_a_pool_profile_has_its_own_queue_and_latency() -> None:
    snapshots = [pool_snapshot(two_pools(t, a=100 * t, b=500 * t), "b") for t in (0.0, 2.0, 4.0)]
    profile = pgbouncer_profile.build_profile(snapshots)
    assert profile.tps == 500.0
    # 20 ms of PgBouncer's transaction time per transaction, 10 of them queued for a server.
    assert profile.extras["client_latency_ms"] == pytest.approx(20.0)
    assert profile.extras["pool_wait_ms_per_txn"] == pytest.approx(10.0)
    assert profile.latency_ms == pytest.approx(10.0)
    assert profile.connections == 20


def test_a_database_without_counters_reads_as_idle() -> None:
    quiet = pool_snapshot(two_pools(0.0, a=10, b=10), "c")
    assert quiet.counters["pgb_xact_count"] == 0.0
    assert quiet.gauges["pgb_clients"] == 0.0


def test_saved_pool_sizes_keep_no_own_size_as_none() -> None:
    settings, pools = split_saved(
        {"default_pool_size": 20, pool_key("bench"): None, pool_key("bench2"): 12}
    )
    assert settings == {"default_pool_size": 20}
    assert pools == {"bench": None, "bench2": 12}


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"default_pool_size": None}, "default_pool_size has no value to put back"),
        ({"thread_pool_size": 4}, "'thread_pool_size' is neither a PgBouncer setting"),
        ({"pool_size@": 4}, "'pool_size@' is neither"),
    ],
)
def test_saved_names_that_are_neither_are_refused(
    values: dict[str, int | None], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        split_saved(values)


def test_the_profiler_follows_the_engine_and_the_simulator_names_its_counters() -> None:
    assert profiler_for(Engine.PGBOUNCER) is PGBOUNCER
    assert profiler_for("mariadb") is MARIADB and profiler_for(Engine.PERCONA) is MARIADB
    simulated = SimulatedTarget.from_settings(engine=Engine.PGBOUNCER, seed=1, workload="cpu")
    assert simulated.engine is Engine.PGBOUNCER
    assert target_profiler(simulated) is MARIADB
