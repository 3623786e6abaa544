from typing import Any

from agents.heuristic import heuristic_pool_size, heuristic_recommendation
from agents.wire import HostFacts, WorkloadProfile


def host(cpus: int = 8, engine: str = "mariadb") -> HostFacts:
    return HostFacts(
        hostname="h", engine=engine, engine_version="10.11", cpu_count=cpus, memory_bytes=1 << 30
    )


def profile(**overrides: Any) -> WorkloadProfile:
    fields: dict[str, Any] = {
        "window_s": 30.0,
        "connections": 256,
        "active_connections": 40.0,
        "qps": 5000.0,
        "tps": 500.0,
    }
    return WorkloadProfile.model_validate(fields | overrides)


def test_cpu_bound_load_gets_one_thread_per_core() -> None:
    assert (
        heuristic_pool_size(host(8), profile(cpu_ms_per_request=1.0, wait_ms_per_request=0.0)) == 8
    )


def test_io_bound_load_gets_cores_times_one_plus_blocking() -> None:
    p = profile(cpu_ms_per_request=0.5, wait_ms_per_request=1.5)
    assert heuristic_pool_size(host(8), p) == 32


def test_unknown_blocking_falls_back_to_the_core_count() -> None:
    assert heuristic_pool_size(host(6), profile()) == 6


def test_unknown_wait_is_estimated_from_latency_minus_cpu_time() -> None:
    p = profile(cpu_ms_per_request=2.0, latency_ms=8.0)
    assert heuristic_pool_size(host(4), p) == 16


def test_size_is_clipped_to_connections_and_catalog() -> None:
    heavy = {"cpu_ms_per_request": 0.1, "wait_ms_per_request": 100.0}
    assert (
        heuristic_pool_size(host(8), profile(connections=12, active_connections=4.0, **heavy)) == 12
    )
    assert heuristic_pool_size(host(64), profile(**heavy)) == 128


def test_recommendation_has_every_tuned_knob_with_a_range_around_it() -> None:
    p = profile(cpu_ms_per_request=1.0, wait_ms_per_request=1.0)
    start, ranges = heuristic_recommendation(host(4), p)
    assert start.values == {
        "thread_pool_size": 8,
        "thread_pool_oversubscribe": 3,
        "thread_pool_stall_limit": 500,
    }
    assert (ranges["thread_pool_size"].low, ranges["thread_pool_size"].high) == (4, 16)
    over = ranges["thread_pool_oversubscribe"]
    assert (over.low, over.high) == (2, 7)  # 3 / 2 rounds to 2; max(3 · 2, 3 + 4)
    for name, value in start.values.items():
        assert ranges[name].low <= value <= ranges[name].high


def test_pgbouncer_pool_size_follows_the_same_rule() -> None:
    start, _ = heuristic_recommendation(
        host(4, "pgbouncer"), profile(cpu_ms_per_request=1.0, wait_ms_per_request=2.0)
    )
    assert start.values == {"default_pool_size": 12, "reserve_pool_size": 0}


def test_lock_waits_ask_for_no_thread() -> None:
    # 2 ms of W per 0.5 ms of CPU, 1.5 ms of it queued on row locks: only 0.5 ms overlaps.
    locked = profile(
        cpu_ms_per_request=0.5, wait_ms_per_request=2.0, extras={"lock_wait_ms_per_txn": 1.5}
    )
    assert locked.blocking_coefficient == 1.0
    assert heuristic_pool_size(host(8), locked) == 16
    unmeasured = profile(cpu_ms_per_request=0.5, wait_ms_per_request=2.0)
    assert heuristic_pool_size(host(8), unmeasured) == 40


def saturated(busy: float, pool: float = 20.0) -> dict[str, float]:
    return {"host_cpu_busy": busy, "pool_connections_mean": pool}


def test_a_pool_on_saturated_cpus_is_not_widened() -> None:
    # Select-only at 128 clients on 2 shared cores: held 1.1 ms for 0.06 ms of CPU, W/S 17
    # — run-queue time that grows with the pool itself.
    queueing = {"cpu_ms_per_request": 0.063, "wait_ms_per_request": 1.08}
    busy_host = profile(connections=128, extras=saturated(busy=1.95), **queueing)
    assert heuristic_pool_size(host(2, "pgbouncer"), busy_host) == 20
    # Spare CPU, or not known: the wait may be overlapped, W/S stands (2 × 18.1 = 36).
    for extras in (saturated(busy=1.5), {"host_cpu_busy": 1.95}, {}):
        p = profile(connections=128, extras=extras, **queueing)
        assert heuristic_pool_size(host(2, "pgbouncer"), p) == 36


def test_the_saturation_ceiling_only_lowers_the_size() -> None:
    p = profile(
        connections=128,
        cpu_ms_per_request=1.0,
        wait_ms_per_request=1.0,
        extras=saturated(busy=2.0, pool=40.0),
    )
    assert heuristic_pool_size(host(2, "pgbouncer"), p) == 4
