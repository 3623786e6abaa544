"""Synthetic examples with a known optimum and curve, for trainer tests (no simulator needed)."""

from __future__ import annotations

import numpy as np

from agents.wire import HostFacts, WorkloadProfile
from trainer.examples import Example
from trainer.regret import Curve

SIZES = np.array([1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128], dtype=np.float64)


def synthetic_examples(count: int, *, seed: int, profiles_per_group: int = 1) -> list[Example]:
    """Workloads whose optimum is cores·(1 + W/S)·c for a hidden contention factor c."""
    rng = np.random.default_rng(seed)
    examples = []
    for index in range(count):
        cores = int(rng.choice([2, 4, 8, 16, 32]))
        cpu_ms = float(np.exp(rng.uniform(np.log(0.1), np.log(5))))
        blocking = float(np.exp(rng.uniform(np.log(0.05), np.log(15))))
        contention = float(rng.uniform(0.5, 1.0))
        connections = int(rng.integers(cores, 2048))
        best = float(np.clip(cores * (1 + blocking) * contention, 1, min(128, connections)))
        # Curve of shape A peaking at `best`: rises linearly, falls in log space after.
        peak = 1000.0 * cores / cpu_ms
        throughput = np.where(
            SIZES <= best, peak * SIZES / best, peak * (1 - 0.15 * np.log2(SIZES / best))
        ).clip(min=0.0)
        curve = Curve(sizes=SIZES, throughput=throughput)
        optimal = int(curve.best_size)
        host = HostFacts(
            hostname=f"synthetic-{index}",
            engine="mariadb",
            engine_version="10.11",
            cpu_count=cores,
            memory_bytes=1 << 34,
        )
        for repeat in range(profiles_per_group):
            noise = rng.normal(1.0, 0.05, size=3).clip(0.8, 1.2)
            profile = WorkloadProfile(
                window_s=30.0,
                connections=connections,
                active_connections=float(min(connections, best * 1.5)),
                qps=peak * 0.8,
                tps=peak * 0.08,
                latency_ms=cpu_ms * (1 + blocking) * float(noise[0]),
                cpu_ms_per_request=cpu_ms * float(noise[1]),
                wait_ms_per_request=cpu_ms * blocking * float(noise[2]),
            )
            examples.append(
                Example(
                    group=f"w{index}",
                    host=host,
                    profile=profile,
                    optimal_tuple={"thread_pool_size": optimal, "thread_pool_oversubscribe": 3},
                    curve=curve,
                    origin=f"synthetic:{index}:{repeat}",
                )
            )
    return examples
