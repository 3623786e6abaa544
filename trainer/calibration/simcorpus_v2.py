"""Build ``datasets/sim-v2``: simulated workloads around the calibrated real cases and from the
broad sim-v1 prior, profiled as the agent profiles a real server.

Each workload is drawn from its own seed (``seed × 1_000_003 + index``), so any one can be
regenerated alone. The first ``calibrated_share`` of the indices go round-robin to the fitted
real cases (:mod:`trainer.calibration.fit`): the case's parameters, each jittered (lognormal
with σ = U(0, 1) × 0.5 in log per draw, connections × 2^(±2σ); cores the case's 70% of the
time, else 1, 2, 4 or 8). The rest are :func:`agents.sim.random_workload_v2` draws (sim-v1's
families on MariaDB's group scheduling, with co-located load generators and flush stalls). For
each: the profile the agent would measure at the engine defaults
(:func:`agents.sim.agent_profile`, 10% measurement noise), the noise-free curves, the optimal
tuple, the knee, and the hidden parameters.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from agents import knobs
from agents.knobs import Engine
from agents.sim import SimServer, SimWorkload, agent_profile, random_workload_v2
from agents.sim.measure import statements_per_transaction
from trainer.calibration.fit import CaseFit
from trainer.calibration.realcases import RealCase
from trainer.simcorpus import (
    CHUNK,
    CURVE_DOCS,
    MEASUREMENT_CV,
    OVERSUBSCRIBE,
    PROFILE_WINDOW_S,
    SIZE,
    STALL,
    run_chunks,
    schema_section,
    tables,
    workload_curves,
    workload_row,
)

VERSION = "sim-v2"
CALIBRATED_SHARE = 0.3
#: Largest log-space jitter of a fitted parameter around its case (a draw's is U(0, 1) × it).
JITTER = 0.5
#: Share of the draws around a case moved to another core count (1, 2, 4 or 8).
OTHER_CORES = 0.3
_JITTERED = (
    "cpu_ms",
    "io_ms",
    "think_ms",
    "serial_fraction",
    "coherency",
    "lock_ms",
    "lock_conflict",
    "switch_penalty",
    "client_cpu_ms",
    "stall_rate",
    "stall_ms",
)
_CORE_CHOICES = (1, 2, 4, 8)


def calibration_record(case: RealCase, fit: CaseFit) -> dict[str, Any]:
    """What sim-v2 needs of one fitted case (JSON-ready; kept in the corpus's manifest)."""
    profile = case.profile
    return {
        "workload_id": case.workload_id,
        "group": case.group.split(":", 1)[-1],
        "kind": case.kind,
        "parameters": dict(fit.parameters),
        "statements_per_transaction": (profile.qps / profile.tps if profile.tps > 0 else None),
        "read_fraction": profile.read_fraction,
        "noise_cv": fit.noise.cv,
        "stall_share": fit.noise.stall_rate,
        "median_error": fit.median_error,
    }


def _jittered(rng: np.random.Generator, record: Mapping[str, Any]) -> SimWorkload:
    """The case's fitted workload moved by a random amount: the spread of each draw is
    U(0, 1) × :data:`JITTER`, so the draws are dense near the fit and reach far from it."""
    spread = JITTER * float(rng.uniform(0.0, 1.0))
    params = dict(record["parameters"])
    for name in _JITTERED:
        if params.get(name):
            params[name] = float(params[name]) * float(np.exp(rng.normal(0.0, spread)))
    signalled = float(params.get("signalled_fraction", 0.5))
    logit = math.log(signalled / (1.0 - signalled)) + float(rng.normal(0.0, 2.0 * spread))
    params["signalled_fraction"] = min(0.99, max(0.01, 1.0 / (1.0 + math.exp(-logit))))
    params["serial_fraction"] = min(float(params.get("serial_fraction", 0.0)), 0.9)
    params["untimed_cpu_fraction"] = min(float(params.get("untimed_cpu_fraction", 0.0)), 0.95)
    rounds = float(params["rounds"]) * float(np.exp(rng.normal(0.0, spread / 3.0)))
    params["rounds"] = max(1.0, rounds)
    factor = 2.0 ** float(rng.uniform(-1.0, 1.0) * 2.0 * spread)
    params["connections"] = max(1, round(int(params["connections"]) * factor))
    if rng.random() < OTHER_CORES:
        params["cores"] = int(rng.choice(_CORE_CHOICES))
    params["name"] = str(record["workload_id"])
    return SimWorkload(**params)


@dataclasses.dataclass(frozen=True)
class Draw:
    """One drawn workload and what the profile needs besides its parameters."""

    workload: SimWorkload
    kind: str
    group: str
    statements_per_transaction: float | None
    read_fraction: float | None
    calibrated_from: str
    noise_cv: float
    stall_share: float


def draw(
    seed: int, index: int, calibration: Sequence[Mapping[str, Any]], calibrated: int
) -> tuple[Draw, np.random.Generator]:
    """Workload ``index``: around case ``index mod len(calibration)`` for the first
    ``calibrated`` indices, else from the broad prior. Returns its generator for the rest."""
    rng = np.random.default_rng(seed * 1_000_003 + index)
    workload_id = f"w{index:06d}"
    if index < calibrated and calibration:
        record = calibration[index % len(calibration)]
        noise_cv = float(record["noise_cv"]) * float(np.exp(rng.normal(0.0, 0.2)))
        case_draw = Draw(
            workload=_jittered(rng, record),
            kind=str(record["kind"]),
            group=f"calibrated:{record['group']}",
            statements_per_transaction=record["statements_per_transaction"],
            read_fraction=record["read_fraction"],
            calibrated_from=str(record["workload_id"]),
            noise_cv=noise_cv,
            stall_share=float(record["stall_share"]),
        )
        return case_draw, rng
    workload = random_workload_v2(rng)
    io_like = workload.name in {"io", "lock"}
    prior_draw = Draw(
        workload=workload,
        kind=workload.name,
        group=workload_id,
        statements_per_transaction=statements_per_transaction(rng),
        read_fraction=float(1.0 - workload.write_fraction),
        calibrated_from="",
        noise_cv=float(np.exp(rng.uniform(math.log(0.03), math.log(0.2)))),
        stall_share=float(rng.uniform(0.0, 0.2)) if io_like else 0.0,
    )
    return prior_draw, rng


def simulate_workload(
    seed: int, index: int, calibration: Sequence[Mapping[str, Any]], calibrated: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One workload's row and its curve points."""
    drawn, rng = draw(seed, index, calibration, calibrated)
    workload = drawn.workload
    server = SimServer(workload, seed=int(rng.integers(2**31)))
    defaults = knobs.default_tuple(Engine.MARIADB, workload.cores)
    profile = agent_profile(
        workload,
        rng,
        size=float(defaults[SIZE]),
        oversubscribe=float(defaults[OVERSUBSCRIBE]),
        stall_limit=float(defaults[STALL]),
        statements_per_transaction=drawn.statements_per_transaction,
        read_fraction=drawn.read_fraction,
        window_s=PROFILE_WINDOW_S,
        measurement_cv=MEASUREMENT_CV,
    )
    optimum = server.optimum()
    knee = server.knee()
    workload_id = f"w{index:06d}"
    points = workload_curves(workload_id, workload, optimum=optimum, knee=knee, defaults=defaults)
    row = workload_row(
        workload_id,
        group=drawn.group,
        kind=drawn.kind,
        version=VERSION,
        workload=workload,
        server=server,
        profile=profile,
        optimum=optimum,
        knee=knee,
        defaults=defaults,
    )
    row |= {
        "calibrated_from": drawn.calibrated_from,
        "sim_noise_cv": drawn.noise_cv,
        "sim_stall_share": drawn.stall_share,
    }
    row |= {
        f"sim_{name}": float(getattr(workload, name))
        for name in (
            "cpu_ms",
            "io_ms",
            "lock_ms",
            "lock_conflict",
            "think_ms",
            "rounds",
            "coherency",
            "serial_fraction",
            "signalled_fraction",
            "switch_penalty",
            "client_cpu_ms",
            "stall_rate",
            "stall_ms",
        )
    }
    return row, points


def _chunk(
    args: tuple[int, int, int, Sequence[Mapping[str, Any]], int],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    seed, start, stop, calibration, calibrated = args
    rows, points = [], []
    for index in range(start, stop):
        row, curve = simulate_workload(seed, index, calibration, calibrated)
        rows.append(row)
        points.extend(curve)
    return rows, points


def build_corpus(
    count: int,
    *,
    seed: int,
    calibration: Sequence[Mapping[str, Any]],
    calibrated_share: float = CALIBRATED_SHARE,
    processes: int = 2,
    on_progress: Callable[[int], None] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``count`` workloads as the (workloads, curves) tables of a dataset."""
    calibrated = round(count * calibrated_share) if calibration else 0
    chunks = [
        (seed, start, min(start + CHUNK, count), list(calibration), calibrated)
        for start in range(0, count, CHUNK)
    ]
    rows, points = run_chunks(_chunk, chunks, processes=processes, on_progress=on_progress)
    return tables(rows, points)


COLUMN_DOCS = {
    "workload_id": "unique id of the workload (w000000…)",
    "group": "workload group for splits: `calibrated:<real group>` for the draws around a real "
    "case (all draws around one real workload group are one group), else the workload id",
    "kind": "calibrated draws: the real case's kind (cpu, io, lock, mixed); prior draws: the "
    "family drawn (cpu, io, lock, light)",
    "engine / engine_version": "mariadb / sim-v2",
    "cpu_count": "host cores (1–128)",
    "memory_bytes": "4 GiB per core (not used by the simulator)",
    "window_s … sync_ms_per_request": "the WorkloadProfile fields as the agent computes them "
    "from a server's counters (agents/profile.py; agents/sim/measure.py) at the default tuple, "
    "with 10% lognormal measurement noise; per statement: latency is execution time, CPU the "
    "server's CPU with contention, W = latency − CPU, rounds = 1 + waits per statement, think "
    "time by Little's law, tps = qps / statements per transaction (0 for autocommit); "
    "thread_create_ms unknown, as on a real server",
    "extras": "JSON object of engine-specific counters (empty here)",
    "best_thread_pool_size": "smallest size within 1% of the best size's throughput",
    "best_thread_pool_oversubscribe / best_thread_pool_stall_limit": "best secondary knobs at "
    "that size (the defaults 3 / 500 unless another pair is > 1% better)",
    "knee_size": "smallest size reaching 95% of the peak",
    "peak_throughput": "throughput (statements/s) at the best tuple",
    "default_throughput": "throughput at the engine defaults (size = cores, 3, 500)",
    "calibrated_from": "the real case (mariadb-2core-v1 workload id) this workload was drawn "
    "around; empty for prior draws. A leave-one-workload-out evaluation on the real data must "
    "drop the draws around the held-out group",
    "sim_noise_cv / sim_stall_share": "sample noise for replays: the CV of a 1-s sample and the "
    "share of samples that are stalls (the real case's, jittered; drawn for prior draws)",
    "sim_*": "the simulator's hidden parameters (analysis only; never features)",
}


def readme(manifest: Mapping[str, Any]) -> str:
    """The corpus's README: provenance, calibration and the schema."""
    curve_docs = dict(CURVE_DOCS) | {
        "throughput": "noise-free steady-state throughput (statements/s)"
    }
    description = manifest["description"]
    calibration = description.get("calibration", [])
    cases = "\n".join(
        f"| {c['workload_id']} | {c['kind']} | {c['median_error']:.3f} | {c['noise_cv']:.3f} |"
        for c in calibration
    )
    return f"""# sim-v2 — simulated workloads calibrated to measured curves

{manifest["workloads"]:,} workloads from pooltune's queueing simulator (`agents/sim/`):
{description["calibrated_workloads"]:,} drawn around the {len(calibration)} real cases of
`{description["real_dataset"]}` after fitting the simulator to each measured curve, and the rest
from sim-v1's broad prior (2–128 cores, 1–4,096 connections; CPU-, IO-, lock-bound and light
loads) on MariaDB's group scheduling with co-located load generators and flush stalls. The
profiles are what the agent computes from a server's counters, per statement. How the model,
the fit and the draws work: `docs/simulator.md`, `trainer/calibration/`.

Made with (seeded; the same command gives the same workloads; it fits the real cases first,
deterministically, or reads the fitted parameters with `--calibration <MANIFEST.json>`):

```sh
{manifest["command"]}
```

Created {manifest["created_at"]}. Read with `trainer.sources.datasets.load_dataset("sim-v2")`, which
checks every file against `MANIFEST.json`; the fitted parameters of every real case are in the
manifest (`description.calibration`). Check that it covers the real cases with
`python -m benchmarks.calibration`.

## Calibration (fit error = median |log(simulated / measured)| over the sizes)

| real case | kind | fit error | curve CV |
|---|---|---|---|
{cases}

{schema_section(manifest, COLUMN_DOCS, curve_docs)}"""
