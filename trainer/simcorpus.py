"""Build ``datasets/sim-v1``: a seeded corpus of simulated workloads (see agents/sim), each
with its measured profile, its curves, the optimal tuple and the knee (docs/datasets.md)."""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd

from agents import knobs
from agents.knobs import Engine
from agents.sim import SimServer, random_workload
from agents.sim.model import OVERSUBSCRIBE_GRID, STALL_LIMIT_GRID

#: Pool sizes at which curves are stored: every size to 16, then steps of 2, 4 and 8 (regret
#: interpolates in log size between them, which is exact at the stored sizes).
SIZE_GRID = (
    tuple(range(1, 17))
    + tuple(range(18, 33, 2))
    + tuple(range(36, 65, 4))
    + tuple(range(72, 129, 8))
)
PROFILE_WINDOW_S = 30.0
MEASUREMENT_CV = 0.1
SIZE = "thread_pool_size"
OVERSUBSCRIBE = "thread_pool_oversubscribe"
STALL = "thread_pool_stall_limit"


def simulate_workload(seed: int, index: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One workload's row and its curve points."""
    rng = np.random.default_rng(seed * 1_000_003 + index)
    workload = random_workload(rng)
    server = SimServer(workload, seed=int(rng.integers(2**31)))
    engine = Engine.MARIADB
    defaults = knobs.default_tuple(engine, workload.cores)
    profile = server.measured_profile(
        rng, knobs=defaults, window_s=PROFILE_WINDOW_S, measurement_cv=MEASUREMENT_CV
    )
    optimum = server.optimum()
    knee = server.knee()
    workload_id = f"w{index:06d}"
    # The grid plus the optimum and the knee themselves, so that regret is exact there.
    sizes = np.array(sorted(set(SIZE_GRID) | {optimum[SIZE], knee}), dtype=np.float64)
    size_tp, size_latency = workload.steady_state(sizes)
    points = [
        {
            "workload_id": workload_id,
            "knob": SIZE,
            "value": int(s),
            "throughput": float(t),
            "latency_ms": float(lat),
        }
        for s, t, lat in zip(sizes, size_tp, size_latency, strict=True)
    ]
    best_size = float(optimum[SIZE])
    for knob_name, grid in ((OVERSUBSCRIBE, OVERSUBSCRIBE_GRID), (STALL, STALL_LIMIT_GRID)):
        values = np.array(grid, dtype=np.float64)
        if knob_name == OVERSUBSCRIBE:
            tp, lat = workload.steady_state(best_size, values, float(defaults[STALL]))
        else:
            tp, lat = workload.steady_state(best_size, float(defaults[OVERSUBSCRIBE]), values)
        points += [
            {
                "workload_id": workload_id,
                "knob": knob_name,
                "value": int(v),
                "throughput": float(t),
                "latency_ms": float(la),
            }
            for v, t, la in zip(values, tp, lat, strict=True)
        ]
    row: dict[str, Any] = {
        "workload_id": workload_id,
        "group": workload_id,
        "kind": workload.name,
        "engine": engine.value,
        "engine_version": "sim-v1",
        "cpu_count": workload.cores,
        "memory_bytes": workload.cores * (4 << 30),
    }
    for field, value in profile.model_dump().items():
        row[field] = json.dumps(value) if field == "extras" else value
    row |= {f"best_{name}": int(value) for name, value in optimum.items()}
    row |= {
        "knee_size": knee,
        "peak_throughput": server.peak(),
        "default_throughput": server.expected_throughput(defaults),
        # The generating parameters, for analysis (never features: an agent cannot see them).
        "sim_cpu_ms": workload.cpu_ms,
        "sim_io_ms": workload.io_ms,
        "sim_lock_ms": workload.lock_ms,
        "sim_lock_conflict": workload.lock_conflict,
        "sim_think_ms": workload.think_ms,
        "sim_rounds": workload.rounds,
        "sim_coherency": workload.coherency,
        "sim_serial_fraction": workload.serial_fraction,
    }
    return row, points


def _chunk(args: tuple[int, int, int]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    seed, start, stop = args
    rows, points = [], []
    for index in range(start, stop):
        row, curve = simulate_workload(seed, index)
        rows.append(row)
        points.extend(curve)
    return rows, points


def build_corpus(
    count: int,
    *,
    seed: int,
    processes: int = 2,
    on_progress: Callable[[int], None] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``count`` workloads as the (workloads, curves) tables of a dataset."""
    step = 500
    chunks = [(seed, start, min(start + step, count)) for start in range(0, count, step)]
    rows: list[dict[str, Any]] = []
    points: list[dict[str, Any]] = []

    def results() -> Iterator[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
        if processes <= 1:
            yield from map(_chunk, chunks)
            return
        with multiprocessing.get_context("spawn").Pool(processes) as pool:
            yield from pool.imap(_chunk, chunks)

    for chunk_rows, chunk_points in results():
        rows.extend(chunk_rows)
        points.extend(chunk_points)
        if on_progress is not None:
            on_progress(len(chunk_rows))
    workloads = pd.DataFrame.from_records(rows)
    curves = pd.DataFrame.from_records(points)
    curves["throughput_std"] = np.nan  # noise-free truth: no spread to report
    curves["samples"] = 0
    curves = curves.astype(
        {"value": "int16", "throughput": "float32", "latency_ms": "float32", "samples": "int16"}
    )
    curves["knob"] = curves["knob"].astype("category")
    for name in ("engine", "engine_version", "kind"):
        workloads[name] = workloads[name].astype("category")
    return workloads, curves


COLUMN_DOCS = {
    "workload_id": "unique id of the workload (w000000…)",
    "group": "workload group for splits (here = workload_id: every workload is its own group)",
    "kind": "family drawn: cpu, io, lock, light",
    "engine / engine_version": "mariadb / sim-v1",
    "cpu_count": "host cores (2–128)",
    "memory_bytes": "4 GiB per core (not used by the simulator)",
    "window_s … sync_ms_per_request": "the WorkloadProfile fields as an agent measures them at "
    "the default tuple, with 10% lognormal measurement noise (see agents/wire.py for units); "
    "sync_ms_per_request is the contention inflation of a CPU burst (what performance_schema's "
    "wait/synch timers see)",
    "extras": "JSON object of engine-specific counters (empty here)",
    "best_thread_pool_size": "smallest size within 1% of the best size's throughput",
    "best_thread_pool_oversubscribe / best_thread_pool_stall_limit": "best secondary knobs at "
    "that size (the defaults 3 / 500 unless another pair is > 1% better)",
    "knee_size": "smallest size reaching 95% of the peak",
    "peak_throughput": "throughput (requests/s) at the best size, defaults elsewhere",
    "default_throughput": "throughput at the engine defaults (size = cores, 3, 500)",
    "sim_*": "the simulator's hidden parameters (analysis only; never features)",
}

CURVE_DOCS = {
    "workload_id": "the workload",
    "knob": "which knob varies: thread_pool_size (at default 3 / 500), or "
    "thread_pool_oversubscribe / thread_pool_stall_limit (at the best size)",
    "value": "the knob's value",
    "throughput": "noise-free steady-state throughput (requests/s)",
    "throughput_std": "NaN: simulated truth has no spread",
    "samples": "0: not measured",
    "latency_ms": "noise-free mean latency (ms)",
}


def readme(manifest: dict[str, Any]) -> str:
    rows = "\n".join(f"| `{k}` | {v} |" for k, v in COLUMN_DOCS.items())
    curve_rows = "\n".join(f"| `{k}` | {v} |" for k, v in CURVE_DOCS.items())
    files = "\n".join(
        f"| `{name}` | {meta['bytes']:,} | `{meta['sha256']}` |"
        for name, meta in manifest["files"].items()
    )
    return f"""# sim-v1 — simulated workloads

{manifest["workloads"]:,} workloads from pooltune's queueing simulator (`agents/sim/`), spanning
2–128 cores, 1–4,096 connections, CPU-bound, IO-bound, lock-bound and light loads. For each: the
profile an agent would measure (with measurement noise), the pool-size curve and short
oversubscribe / stall-limit curves, the optimal tuple and the knee. See `trainer/simcorpus.py`
for how each is drawn and `agents/sim/model.py` for the model.

Made with (seeded; the same command gives the same workloads):

```sh
{manifest["command"]}
```

Created {manifest["created_at"]}. Read with `trainer.sources.datasets.load_dataset("sim-v1")`, which
checks every file against `MANIFEST.json` and refuses a changed one; import into the service's
database with `pooltune-trainer import-dataset sim-v1`.

## Files

| file | bytes | sha256 |
|---|---|---|
{files}

## `workloads.parquet` — one row per workload

| column | meaning |
|---|---|
{rows}

## `curves.parquet` — curve points, long format

| column | meaning |
|---|---|
{curve_rows}
"""
