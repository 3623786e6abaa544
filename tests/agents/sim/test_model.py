"""The simulator's shapes and knobs' effects, its noise and its scoring helpers."""

from __future__ import annotations

import numpy as np
import pytest

from agents.sim import NoiseConfig, SimServer, SimWorkload, WorkloadKind, random_workload
from agents.sim.curves import KneeCurve, UslCurve, WorkloadCurve, knee_size
from agents.sim.model import heuristic_size
from agents.sim.noise import NoiseSequence
from agents.wire import WorkloadProfile


def argmax_size(curve: np.ndarray) -> int:
    return int(np.argmax(curve)) + 1


def test_cpu_bound_heavy_load_rises_to_about_the_cores_then_falls() -> None:
    w = SimWorkload(cores=8, connections=256, cpu_ms=1.0, coherency=0.002, serial_fraction=0.02)
    curve = w.curve()
    assert 6 <= argmax_size(curve) <= 12
    assert curve[0] < 0.3 * curve.max()  # rise
    assert curve[63] < 0.3 * curve.max()  # fall


def test_io_bound_optimum_is_well_above_the_cores() -> None:
    w = SimWorkload(cores=8, connections=512, cpu_ms=0.5, io_ms=5.0, signalled_fraction=0.3)
    best = argmax_size(w.curve())
    assert best > 4 * w.cores
    # Same order as the fallback heuristic cores·(1 + W/S).
    assert 0.3 * heuristic_size(w) <= best <= 2 * heuristic_size(w)


def test_heavy_contention_rises_then_falls() -> None:
    w = SimWorkload(
        cores=8,
        connections=256,
        cpu_ms=1.0,
        io_ms=1.0,
        lock_ms=2.0,
        lock_conflict=0.05,
        coherency=0.003,
    )
    curve = w.curve()
    best = argmax_size(curve)
    assert 8 < best < 64
    assert curve[-1] < 0.2 * curve.max()


def test_synchronisation_time_is_the_contention_at_the_operating_point() -> None:
    """sync_ms_per_round is the USL inflation of the CPU burst with the requests executing
    at that tuple: none for a lone request, growing with the pool, and κ shows at one point
    (the same pool size, ten times the coherency, far more synchronisation)."""
    w = SimWorkload(cores=8, connections=256, cpu_ms=1.0, coherency=0.002, serial_fraction=0.02)
    size = "thread_pool_size"
    assert w.sync_ms_per_round({size: 1, "thread_pool_oversubscribe": 0}) == pytest.approx(0.0)
    times = [w.sync_ms_per_round({size: s}) for s in (2, 4, 8, 16)]
    assert times == sorted(times) and times[0] > 0
    _, executing, _ = w.occupancy({size: 8})
    r = executing  # no waits: every executing request wants a CPU
    assert times[2] == pytest.approx(1.0 * (0.02 * (r - 1) + 0.002 * r * (r - 1)), rel=1e-9)
    hot = SimWorkload(cores=8, connections=256, cpu_ms=1.0, coherency=0.02, serial_fraction=0.02)
    assert hot.sync_ms_per_round({size: 8}) > 3 * times[2]
    # Waiting for IO is not waiting on a latch: a lone IO-bound request times none, as the
    # real IO-bound server timed almost none at pool size 1.
    io = SimWorkload(cores=8, connections=256, cpu_ms=0.2, io_ms=2.0, signalled_fraction=0.25)
    assert io.sync_ms_per_round({size: 1, "thread_pool_oversubscribe": 0}) == pytest.approx(0.0)


def test_light_load_rises_then_plateaus() -> None:
    w = SimWorkload(cores=8, connections=64, cpu_ms=1.0, io_ms=4.0, think_ms=20.0)
    curve = w.curve()
    knee = knee_size(WorkloadCurve(w))
    assert knee > 1
    assert curve[0] < 0.9 * curve.max()
    assert np.all(curve[knee * 2 :] >= 0.97 * curve.max())  # flat after the knee


def test_oversubscribe_helps_announced_waits_and_hurts_under_contention() -> None:
    io = SimWorkload(cores=8, connections=2000, cpu_ms=0.5, io_ms=10.0, signalled_fraction=0.8)
    assert (
        io.expected({"thread_pool_size": 16, "thread_pool_oversubscribe": 16})[0]
        > 1.2 * io.expected({"thread_pool_size": 16, "thread_pool_oversubscribe": 1})[0]
    )
    contended = SimWorkload(
        cores=8, connections=2000, cpu_ms=1.0, io_ms=1.0, signalled_fraction=0.8, coherency=0.005
    )
    assert (
        contended.expected({"thread_pool_size": 16, "thread_pool_oversubscribe": 16})[0]
        < contended.expected({"thread_pool_size": 16, "thread_pool_oversubscribe": 1})[0]
    )


def test_short_stall_limit_helps_long_statements_and_costs_otherwise() -> None:
    long = SimWorkload(cores=8, connections=200, cpu_ms=50.0, io_ms=100.0, signalled_fraction=0.0)
    assert (
        long.expected({"thread_pool_size": 8, "thread_pool_stall_limit": 50})[0]
        > 1.2 * long.expected({"thread_pool_size": 8, "thread_pool_stall_limit": 5000})[0]
    )
    short = SimWorkload(cores=8, connections=200, cpu_ms=0.5, io_ms=0.2)
    assert (
        short.expected({"thread_pool_size": 8, "thread_pool_stall_limit": 10})[0]
        < short.expected({"thread_pool_size": 8, "thread_pool_stall_limit": 500})[0]
    )


def test_curve_is_vectorised_and_matches_pointwise_evaluation() -> None:
    # One vectorised call for the whole grid (what keeps the dataset builder and the
    # benchmark fast) gives exactly what size-by-size evaluation gives.
    w = random_workload(np.random.default_rng(0), kind="io")
    curve = w.curve()
    assert curve.shape == (w.max_size,)
    pointwise = [w.expected({"thread_pool_size": size})[0] for size in (1, 7, 64, w.max_size)]
    assert curve[[0, 6, 63, w.max_size - 1]] == pytest.approx(pointwise)


@pytest.mark.parametrize("kind", list(WorkloadKind))
def test_random_workloads_span_the_documented_ranges(kind: WorkloadKind) -> None:
    rng = np.random.default_rng(1)
    workloads = [random_workload(rng, kind=kind) for _ in range(200)]
    cores = {w.cores for w in workloads}
    assert min(cores) == 2 and max(cores) == 128
    assert all(1 <= w.connections <= 4096 for w in workloads)
    assert all(np.all(np.isfinite(w.curve())) and w.curve().max() > 0 for w in workloads[:20])


def test_formula_curves_have_their_shapes() -> None:
    usl = UslCurve.with_peak_at(30)
    assert 28 <= argmax_size(usl.curve()) <= 32
    knee = KneeCurve(rate=100.0, knee_size=10.0)
    assert knee.curve()[-1] == pytest.approx(100.0, rel=0.01)
    assert knee_size(knee) > 10


def test_noise_depends_only_on_seed_and_index() -> None:
    config = NoiseConfig(cv=0.1, drift=0.2)
    a, b = NoiseSequence(config, 5), NoiseSequence(config, 5)
    assert [a.factor(i) for i in range(600)] == [b.factor(i) for i in range(600)]
    factors = np.array([a.factor(i) for i in range(20_000)])
    assert np.std(np.log(factors[:300])) > 0.05


def test_noise_has_the_configured_cv_and_autocorrelation() -> None:
    sequence = NoiseSequence(NoiseConfig(cv=0.05, autocorrelation=0.5, spike_probability=0.0), 3)
    logs = np.log([sequence.factor(i) for i in range(20_000)])
    assert np.std(logs) == pytest.approx(0.05, rel=0.1)
    assert np.corrcoef(logs[1:], logs[:-1])[0, 1] == pytest.approx(0.5, abs=0.05)


def test_server_lags_one_sample_after_a_change_and_switches_workload() -> None:
    curve = UslCurve.with_peak_at(20)
    server = SimServer(curve, seed=0, noise=NoiseConfig(cv=0.0, spike_probability=0.0))
    low = server.sample({"thread_pool_size": 2}).throughput
    blended = server.sample({"thread_pool_size": 20}).throughput
    settled = server.sample({"thread_pool_size": 20}).throughput
    assert low < blended < settled
    assert blended == pytest.approx((low + settled) / 2)
    server.switch_workload(UslCurve.with_peak_at(20, rate=2000.0))
    assert server.sample({"thread_pool_size": 20}).throughput == pytest.approx(2 * settled)


def test_optimum_knee_and_profile_for_scoring() -> None:
    w = SimWorkload(cores=8, connections=512, cpu_ms=0.5, io_ms=5.0, think_ms=1.0, rounds=4)
    server = SimServer(w, seed=1)
    optimum = server.optimum()
    assert server.knee() <= optimum["thread_pool_size"]
    assert server.expected_throughput(optimum) >= 0.98 * server.curve.curve().max()
    profile = server.measured_profile(np.random.default_rng(2))
    assert isinstance(profile, WorkloadProfile)
    assert profile.connections == 512
    # Per statement (one round), as the agent measures: S = 0.5 ms, W ≈ the 5 ms of IO.
    assert profile.cpu_ms_per_request == pytest.approx(0.5, rel=0.5)
    assert profile.blocking_coefficient == pytest.approx(10.0, rel=0.5)
    # At the default size most of the 512 clients queue in the pool. The latency is execution
    # time, as query_response_time times it: S + W, without that queueing, which Little's
    # law on the busy clients shows to be far longer.
    exact = server.measured_profile(np.random.default_rng(2), measurement_cv=0.0)
    assert exact.latency_ms is not None and exact.wait_ms_per_request is not None
    assert exact.cpu_ms_per_request is not None
    assert exact.latency_ms == pytest.approx(exact.cpu_ms_per_request + exact.wait_ms_per_request)
    assert exact.active_connections / exact.qps * 1000.0 > 5 * exact.latency_ms
