"""The whole agent (loop, profile, heuristic start, real climber) on the simulator."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents.config import parse_config
from agents.loop import AgentLoop, Phase
from agents.sim import SimServer, random_workload
from agents.targets.simulated import SimulatedTarget
from agents.wiring import assemble_agent

SIZE = "thread_pool_size"


def run_agent(tmp_path: Path, target: SimulatedTarget, *, samples: int) -> AgentLoop:
    config = parse_config(
        {
            "agent": {
                "state_dir": str(tmp_path),
                "sample_period_s": 0.001,
                "profile_window_s": 10.0,
                "climb_max_s": 600.0,
            },
            "climber": {"knobs": [SIZE]},
            "bounds": {SIZE: [1, 128]},
        },
        env={},
    )
    loop = assemble_agent(config, target=target, clock=lambda: target.now)
    loop.start()
    for _ in range(samples):
        loop.iterate()
        if loop.phase is Phase.HOLDING:
            break
    return loop


@pytest.mark.parametrize("kind", ["cpu", "io", "lock"])
@pytest.mark.parametrize("seed", [0, 1])
def test_agent_reaches_the_peak_of_a_simulated_server(tmp_path: Path, kind: str, seed: int) -> None:
    workload = random_workload(np.random.default_rng(seed), kind=kind, cores=8)
    target = SimulatedTarget(SimServer(workload, seed=seed))
    loop = run_agent(tmp_path, target, samples=150)
    assert loop.phase is Phase.HOLDING
    held = target.server.expected_throughput(target.knobs)
    # The climber trades up to economy_epsilon (4.5%) of throughput for a smaller pool, judged
    # on a few samples with 5% noise: one run may hold ~7% under the peak (the benchmark's
    # mean final quality over many runs is the sharper figure).
    assert held >= 0.92 * target.server.peak()
    (item,) = loop.uploader.spool.pending()
    report = item.report
    assert report.optimal_tuple.values == target.current_tuple([SIZE])
    assert report.profile.cpu_ms_per_request is not None
    assert report.profile.latency_ms is not None
    loop.shutdown()
    assert target.knobs[SIZE] == 8  # the default (= cores) is back


def test_io_bound_simulated_workload_starts_above_the_cores(tmp_path: Path) -> None:
    """The local heuristic (cores × (1 + W/S)) sends an IO-bound start far above 8."""
    workload = random_workload(np.random.default_rng(0), kind="io", cores=8)
    target = SimulatedTarget(SimServer(workload, seed=0))
    loop = run_agent(tmp_path, target, samples=8)
    assert loop.climb is not None
    assert loop.climb.start_tuple[SIZE] > 8


@pytest.mark.parametrize("seed", range(6))
def test_a_light_load_profile_agrees_with_the_simulator(seed: int) -> None:
    """What the agent measures on a light load (most clients thinking) matches the model:
    the pool's gauges are counts, not connections minus throughput x think time, so the
    throughput noise does not invent a queue, and W is the execution time left after the
    CPU time."""
    from agents.profile import build_profile

    rng = np.random.default_rng(seed)
    workload = random_workload(rng, kind="light", cores=16, connections=600)
    target = SimulatedTarget(SimServer(workload, seed=seed), hostname="light")
    measured = build_profile([target.read_counters() for _ in range(16)])
    truth = SimServer(workload, seed=seed).measured_profile(
        rng, knobs=target.knobs, window_s=30.0, measurement_cv=0.0
    )
    _, executing, queued = workload.occupancy(target.knobs)
    assert measured.active_connections == pytest.approx(executing + queued, rel=1e-6)
    assert measured.wait_ms_per_request is not None and truth.wait_ms_per_request is not None
    # The 5% sample noise moves the throughput the latency is derived from; W is latency
    # minus CPU.
    assert measured.wait_ms_per_request == pytest.approx(
        truth.wait_ms_per_request, rel=0.25, abs=0.02
    )


@pytest.mark.parametrize("kind", ["cpu", "lock", "light"])
def test_the_synchronisation_time_agrees_with_the_simulator(kind: str) -> None:
    """The agent's sync time per statement (Δ of the wait/synch timer over statements) is the
    model's contention inflation of a CPU burst at the tuple in force."""
    from agents.profile import build_profile

    rng = np.random.default_rng(3)
    workload = random_workload(rng, kind=kind, cores=16)
    target = SimulatedTarget(SimServer(workload, seed=3), hostname=kind)
    measured = build_profile([target.read_counters() for _ in range(8)])
    expected = workload.sync_ms_per_round(target.knobs)
    assert measured.sync_ms_per_request == pytest.approx(expected, rel=1e-6, abs=1e-12)
    truth = SimServer(workload, seed=3).measured_profile(
        rng, knobs=target.knobs, window_s=16.0, measurement_cv=0.0
    )
    assert truth.sync_ms_per_request == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_a_bare_curve_has_no_synchronisation_time() -> None:
    """A target on a synthetic curve has no contention model: the field is unknown, not 0."""
    from agents.profile import build_profile
    from agents.sim.curves import UslCurve

    target = SimulatedTarget(SimServer(UslCurve.with_peak_at(8), seed=0), hostname="curve")
    assert build_profile([target.read_counters() for _ in range(4)]).sync_ms_per_request is None
