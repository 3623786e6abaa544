"""Synthetic examples with a known optimum and curve, for trainer tests (no simulator needed)."""

from __future__ import annotations

import numpy as np

from agents.wire import HostFacts, WorkloadProfile
from trainer.examples import Example
from trainer.regret import Curve

SIZES = np.array([1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128], dtype=np.float64)


OVERSUBSCRIBE_VALUES = np.array([1, 3, 8, 32], dtype=np.float64)


def synthetic_examples(
    count: int,
    *,
    seed: int,
    profiles_per_group: int = 1,
    domain: str = "simulated",
    optimum_factor: float = 1.0,
    group_prefix: str = "w",
    cores: int | None = None,
) -> list[Example]:
    """Workloads whose optimum is cores·(1 + W/S)·c·``optimum_factor`` for a hidden
    contention factor c. Oversubscribe 32 brings +20% on IO-heavy ones (W/S > 5) and nothing
    elsewhere (its curve at the best size). ``cores`` fixes the hosts' core count."""
    rng = np.random.default_rng(seed)
    examples = []
    for index in range(count):
        host_cores = int(rng.choice([2, 4, 8, 16, 32])) if cores is None else cores
        cpu_ms = float(np.exp(rng.uniform(np.log(0.1), np.log(5))))
        blocking = float(np.exp(rng.uniform(np.log(0.05), np.log(15))))
        contention = float(rng.uniform(0.5, 1.0))
        connections = int(rng.integers(host_cores, 2048))
        best = float(
            np.clip(
                host_cores * (1 + blocking) * contention * optimum_factor, 1, min(128, connections)
            )
        )
        # Curve of shape A peaking at `best`: rises linearly, falls in log space after.
        peak = 1000.0 * host_cores / cpu_ms
        throughput = np.where(
            SIZES <= best, peak * SIZES / best, peak * (1 - 0.15 * np.log2(SIZES / best))
        ).clip(min=0.0)
        curve = Curve(sizes=SIZES, throughput=throughput)
        optimal = int(curve.best_size)
        io_heavy = blocking > 5
        oversubscribe_gain = np.where(OVERSUBSCRIBE_VALUES == 32, 1.2, 1.0) if io_heavy else 1.0
        oversubscribe = Curve(
            sizes=OVERSUBSCRIBE_VALUES,
            throughput=np.full(OVERSUBSCRIBE_VALUES.size, peak) * oversubscribe_gain,
        )
        host = HostFacts(
            hostname=f"synthetic-{index}",
            engine="mariadb",
            engine_version="10.11",
            cpu_count=host_cores,
            memory_bytes=1 << 34,
        )
        for repeat in range(profiles_per_group):
            noise = rng.normal(1.0, 0.05, size=3).clip(0.8, 1.2)
            profile = WorkloadProfile(
                window_s=30.0,
                connections=connections,
                # The concurrency the workload offers, whatever the optimum_factor says.
                active_connections=float(min(connections, best / optimum_factor * 1.5)),
                qps=peak * 0.8,
                tps=peak * 0.08,
                latency_ms=cpu_ms * (1 + blocking) * float(noise[0]),
                cpu_ms_per_request=cpu_ms * float(noise[1]),
                wait_ms_per_request=cpu_ms * blocking * float(noise[2]),
            )
            examples.append(
                Example(
                    group=f"{group_prefix}{index}",
                    host=host,
                    profile=profile,
                    optimal_tuple={
                        "thread_pool_size": optimal,
                        "thread_pool_oversubscribe": 32 if io_heavy else 3,
                    },
                    curve=curve,
                    origin=f"synthetic:{group_prefix}{index}:{repeat}",
                    domain=domain,
                    knob_curves={"thread_pool_oversubscribe": oversubscribe},
                )
            )
    return examples
