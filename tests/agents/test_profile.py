"""Profile arithmetic on hand-made snapshots."""

from __future__ import annotations

import pytest

from agents.profile import (
    ProfileError,
    build_profile,
    change_passed,
    interval,
    workload_changed,
)
from agents.targets.base import Snapshot
from agents.wire import WorkloadProfile


def snap(
    t: float,
    *,
    questions: float,
    agent: float = 0.0,
    commits: float = 0.0,
    selects: float = 0.0,
    agent_selects: float = 0.0,
    updates: float = 0.0,
    cpu: float | None = None,
    latency: tuple[float, float] | None = None,
    connections: float = 10.0,
    active: float = 2.0,
    queued: float = 0.0,
    uptime: float = 1000.0,
    extra: dict[str, float] | None = None,
) -> Snapshot:
    counters = {
        "Questions": questions,
        "agent_statements": agent,
        "Com_commit": commits,
        "Com_rollback": 0.0,
        "Com_select": selects,
        "agent_selects": agent_selects,
        "Com_update": updates,
        "Innodb_buffer_pool_reads": commits * 0.5,
        "Innodb_data_fsyncs": commits * 2,
        "Innodb_row_lock_waits": commits * 0.01,
        **(extra or {}),
    }
    return Snapshot(
        taken_at=t,
        uptime_s=uptime + t,
        counters=counters,
        gauges={
            "tp_connections": connections,
            "tp_active_threads": active,
            "tp_queue_length": queued,
        },
        cpu_seconds=cpu,
        latency_count=latency[0] if latency else None,
        latency_total_s=latency[1] if latency else None,
    )


def test_rates_exclude_the_agents_own_statements() -> None:
    first = snap(0, questions=1000, agent=10, commits=100)
    last = snap(10, questions=11_000, agent=60, commits=1100)
    rates = interval(first, last)
    assert rates.qps == pytest.approx((10_000 - 50) / 10)
    assert rates.tps == pytest.approx(100)
    assert rates.throughput("transactions") == rates.tps
    assert rates.throughput("queries") == rates.qps
    assert rates.connections == 10
    assert rates.latency_ms is None
    # 10 row-lock waits over 9,950 client statements: what the climber's CPU guard reads.
    assert rates.lock_waits == pytest.approx(10 / 9950)
    assert rates.climber_sample({"thread_pool_size": 2}, rates.tps).lock_waits == rates.lock_waits


def test_lock_waits_are_unknown_without_the_counter_or_statements() -> None:
    without = snap(10, questions=2000, commits=200)
    del without.counters["Innodb_row_lock_waits"]
    assert interval(snap(0, questions=1000, commits=100), without).lock_waits is None
    idle = interval(snap(0, questions=1000, commits=100), snap(10, questions=1000, commits=100))
    assert idle.lock_waits is None


def test_profile_fields_and_their_estimates() -> None:
    first = snap(
        0,
        questions=0,
        commits=0,
        selects=0,
        cpu=100.0,
        latency=(0, 0.0),
        extra={"tp_wait_diskio": 0, "tp_wait_net": 0, "sync_wait_s": 40.0},
    )
    middle = snap(
        15,
        questions=15_000,
        commits=1500,
        selects=12_000,
        updates=1500,
        cpu=107.5,
        latency=(15_000, 30.0),
        connections=14,
        active=4,
        extra={"tp_wait_diskio": 1500, "tp_wait_net": 50_000},
    )
    last = snap(
        30,
        questions=30_000,
        agent=0,
        commits=3000,
        selects=24_000,
        agent_selects=0,
        updates=3000,
        cpu=115.0,
        latency=(30_000, 60.0),
        connections=12,
        active=3,
        extra={"tp_wait_diskio": 3000, "tp_wait_net": 100_000, "sync_wait_s": 43.0},
    )
    profile = build_profile([first, middle, last])
    assert profile.window_s == 30
    assert profile.qps == pytest.approx(1000)
    assert profile.tps == pytest.approx(100)
    assert profile.connections == 12  # mean of 10, 14, 12
    assert profile.active_connections == pytest.approx(3)
    assert profile.read_fraction == pytest.approx(24_000 / 27_000)
    assert profile.latency_ms == pytest.approx(2.0)  # 60 s over 30,000 statements
    assert profile.cpu_ms_per_request == pytest.approx(0.5)  # 15 CPU s over 30,000
    assert profile.wait_ms_per_request == pytest.approx(1.5)
    assert profile.blocking_coefficient == pytest.approx(3.0)
    assert profile.rounds_per_request == pytest.approx(1.1)  # NET waits do not count
    assert profile.think_ms == pytest.approx(1000 * (12 - 3) / 1000)
    assert profile.io_reads_per_txn == pytest.approx(0.5)
    assert profile.fsyncs_per_txn == pytest.approx(2.0)
    assert profile.lock_waits_per_s == pytest.approx(0.01 * 100)
    assert profile.thread_create_ms is None
    assert profile.sync_ms_per_request == pytest.approx(0.1)  # 3 s over 30,000 statements
    assert profile.extras["tp_wait_diskio_per_s"] == pytest.approx(100)


def test_the_pools_queue_does_not_come_off_the_wait() -> None:
    """query_response_time times execution only, so a long queue in front of the pool (here
    8 requests queued at 1000 statements/s: 8 ms each) leaves W = latency − CPU as it is;
    subtracting it erased W on every queueing IO-bound server."""
    first = snap(0, questions=0, cpu=100.0, latency=(0, 0.0), queued=8.0)
    last = snap(10, questions=10_000, cpu=105.0, latency=(10_000, 30.0), queued=8.0)
    profile = build_profile([first, last])
    assert profile.latency_ms == pytest.approx(3.0)
    assert profile.cpu_ms_per_request == pytest.approx(0.5)
    assert profile.wait_ms_per_request == pytest.approx(2.5)


def test_unknown_fields_stay_unknown_not_zero() -> None:
    profile = build_profile([snap(0, questions=0), snap(10, questions=500)])
    assert profile.latency_ms is None
    assert profile.cpu_ms_per_request is None
    assert profile.wait_ms_per_request is None
    assert profile.io_reads_per_txn is None  # no transactions in the window
    assert profile.sync_ms_per_request is None  # no performance_schema timers
    assert profile.tps == 0


def test_a_server_restart_in_the_window_is_refused() -> None:
    with pytest.raises(ProfileError, match="restarted"):
        interval(snap(0, questions=5000, uptime=1000), snap(10, questions=10, uptime=0))


def test_a_profile_needs_two_snapshots_in_order() -> None:
    with pytest.raises(ProfileError, match="at least two"):
        build_profile([snap(0, questions=0)])
    with pytest.raises(ProfileError, match="time order"):
        interval(snap(10, questions=0), snap(5, questions=10))


def test_workload_change_by_connections() -> None:
    profile = build_profile([snap(0, questions=0), snap(10, questions=500)])
    same = interval(snap(0, questions=0), snap(2, questions=100, connections=11))
    more = interval(snap(0, questions=0), snap(2, questions=100, connections=20))
    assert not workload_changed(profile, same)
    assert workload_changed(profile, more)


def test_a_change_passed_only_at_the_same_clients_and_the_held_level() -> None:
    """The held tuple's level is the median of the climb's last samples there; within 20%
    of it at the same clients the change passed, not beyond, not at other clients, and
    never without a level to compare with."""
    before = WorkloadProfile(window_s=30, connections=32, active_connections=8, qps=1000, tps=500)

    def after(tps: float, connections: int = 32) -> WorkloadProfile:
        return before.model_copy(update={"tps": tps, "qps": 2 * tps, "connections": connections})

    levels = (480.0, 500.0, 900.0)  # one outlier: the median holds
    assert change_passed(before, levels, after(420), "transactions")
    assert change_passed(before, levels, after(590), "transactions")
    assert not change_passed(before, levels, after(400), "transactions")  # 0.8 of 500
    assert not change_passed(before, levels, after(620), "transactions")
    assert not change_passed(before, levels, after(500, connections=48), "transactions")
    assert not change_passed(before, (), after(500), "transactions")
    assert change_passed(before, (1000.0,), after(500), "queries")  # 1,000 qps
    assert not change_passed(before, (1000.0,), after(500), "transactions")
