"""Build ``datasets/sim-v1``: a seeded corpus of simulated workloads (see agents/sim), each
with its measured profile, its curves, the optimal tuple and the knee (docs/datasets.md)."""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from agents import knobs
from agents.knobs import Engine
from agents.sim import SimServer, SimWorkload, random_workload
from agents.sim.model import OVERSUBSCRIBE_GRID, STALL_LIMIT_GRID
from agents.wire import WorkloadProfile
from trainer.sources.datasets import files_table

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
ChunkArgs = TypeVar("ChunkArgs")


def curve_points(
    workload_id: str, knob: str, values: np.ndarray, throughput: np.ndarray, latency: np.ndarray
) -> list[dict[str, Any]]:
    """One curve of a workload as rows of ``curves.parquet``."""
    return [
        {
            "workload_id": workload_id,
            "knob": knob,
            "value": int(v),
            "throughput": float(t),
            "latency_ms": float(la),
        }
        for v, t, la in zip(values, throughput, latency, strict=True)
    ]


def workload_curves(
    workload_id: str,
    workload: SimWorkload,
    *,
    optimum: Mapping[str, int],
    knee: int,
    defaults: Mapping[str, int],
) -> list[dict[str, Any]]:
    """A workload's noise-free curves: pool size over :data:`SIZE_GRID` plus the optimum and
    the knee themselves (so that regret is exact there) at the default secondary knobs, then
    oversubscribe and stall limit over their grids at the best size."""
    sizes = np.array(sorted(set(SIZE_GRID) | {optimum[SIZE], knee}), dtype=np.float64)
    points = curve_points(workload_id, SIZE, sizes, *workload.steady_state(sizes))
    best_size = float(optimum[SIZE])
    over = np.array(OVERSUBSCRIBE_GRID, dtype=np.float64)
    stall = np.array(STALL_LIMIT_GRID, dtype=np.float64)
    points += curve_points(
        workload_id,
        OVERSUBSCRIBE,
        over,
        *workload.steady_state(best_size, over, float(defaults[STALL])),
    )
    points += curve_points(
        workload_id,
        STALL,
        stall,
        *workload.steady_state(best_size, float(defaults[OVERSUBSCRIBE]), stall),
    )
    return points


def workload_row(
    workload_id: str,
    *,
    group: str,
    kind: str,
    version: str,
    workload: SimWorkload,
    server: SimServer,
    profile: WorkloadProfile,
    optimum: Mapping[str, int],
    knee: int,
    defaults: Mapping[str, int],
) -> dict[str, Any]:
    """The columns every simulated corpus shares: identity, host, the measured profile, the
    optimal tuple, the knee, and the peak and default throughputs."""
    row: dict[str, Any] = {
        "workload_id": workload_id,
        "group": group,
        "kind": kind,
        "engine": Engine.MARIADB.value,
        "engine_version": version,
        "cpu_count": workload.cores,
        "memory_bytes": workload.cores * (4 << 30),
    }
    for field, value in profile.model_dump().items():
        row[field] = json.dumps(value) if field == "extras" else value
    row |= {f"best_{name}": int(value) for name, value in optimum.items()}
    return row | {
        "knee_size": knee,
        "peak_throughput": server.peak(),
        "default_throughput": server.expected_throughput(defaults),
    }


def simulate_workload(seed: int, index: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One workload's row and its curve points."""
    rng = np.random.default_rng(seed * 1_000_003 + index)
    workload = random_workload(rng)
    server = SimServer(workload, seed=int(rng.integers(2**31)))
    defaults = knobs.default_tuple(Engine.MARIADB, workload.cores)
    profile = server.measured_profile(
        rng, knobs=defaults, window_s=PROFILE_WINDOW_S, measurement_cv=MEASUREMENT_CV
    )
    optimum = server.optimum()
    knee = server.knee()
    workload_id = f"w{index:06d}"
    points = workload_curves(workload_id, workload, optimum=optimum, knee=knee, defaults=defaults)
    row = workload_row(
        workload_id,
        group=workload_id,
        kind=workload.name,
        version="sim-v1",
        workload=workload,
        server=server,
        profile=profile,
        optimum=optimum,
        knee=knee,
        defaults=defaults,
    )
    row |= {
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


#: Workloads per chunk of work handed to a process.
CHUNK = 500

Rows = list[dict[str, Any]]


def run_chunks(
    chunk: Callable[[ChunkArgs], tuple[Rows, Rows]],
    chunks: Sequence[ChunkArgs],
    *,
    processes: int,
    on_progress: Callable[[int], None] | None,
) -> tuple[Rows, Rows]:
    """``chunk`` over ``chunks`` in order (in ``processes`` spawned processes when more than
    one; ``chunk`` must be a module-level function), joined into (rows, points)."""
    rows: Rows = []
    points: Rows = []

    def results() -> Iterator[tuple[Rows, Rows]]:
        if processes <= 1:
            yield from map(chunk, chunks)
            return
        with multiprocessing.get_context("spawn").Pool(processes) as pool:
            yield from pool.imap(chunk, chunks)

    for chunk_rows, chunk_points in results():
        rows.extend(chunk_rows)
        points.extend(chunk_points)
        if on_progress is not None:
            on_progress(len(chunk_rows))
    return rows, points


def tables(
    rows: Sequence[Mapping[str, Any]], points: Sequence[Mapping[str, Any]]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Workload rows and curve points as the dataset's two tables, with their column types."""
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


def build_corpus(
    count: int,
    *,
    seed: int,
    processes: int = 2,
    on_progress: Callable[[int], None] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``count`` workloads as the (workloads, curves) tables of a dataset."""
    chunks = [(seed, start, min(start + CHUNK, count)) for start in range(0, count, CHUNK)]
    rows, points = run_chunks(_chunk, chunks, processes=processes, on_progress=on_progress)
    return tables(rows, points)


def schema_section(
    manifest: Mapping[str, Any], columns: Mapping[str, str], curve_columns: Mapping[str, str]
) -> str:
    """The end of a simulated corpus's README: its files, then the meaning of every column
    of both tables."""
    rows = "\n".join(f"| `{k}` | {v} |" for k, v in columns.items())
    curve_rows = "\n".join(f"| `{k}` | {v} |" for k, v in curve_columns.items())
    return f"""## Files

| file | bytes | sha256 |
|---|---|---|
{files_table(manifest)}

## `workloads.parquet` — one row per workload

| column | meaning |
|---|---|
{rows}

## `curves.parquet` — curve points, long format

| column | meaning |
|---|---|
{curve_rows}
"""


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

{schema_section(manifest, COLUMN_DOCS, CURVE_DOCS)}"""
