"""A measured dataset's cases as calibration targets: every sample of every size.

A sweep dataset (``datasets/mariadb-2core-v1``) keeps, per case and pool size, the kept 1-s
samples in measuring order, the mean of each interleaved visit, the execution latency and the
CPU used by the server and by the load generator. :func:`real_cases` turns each case into a
:class:`RealCase` with the profile the agent measured and the unit conversions the simulator
needs: the simulator counts statements (one request to the pool), a case may count
transactions.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from agents.knobs import POOL_SIZE_KNOB, Engine
from agents.wire import HostFacts, WorkloadProfile
from trainer.sources import datasets

FloatArray = NDArray[np.float64]
SIZE_KNOB = POOL_SIZE_KNOB[Engine.MARIADB]


@dataclass(frozen=True)
class SecondarySweep:
    """Throughput samples of one secondary knob's values (the other knobs at defaults)."""

    knob: str
    values: FloatArray
    samples: tuple[FloatArray, ...]

    @property
    def throughput(self) -> FloatArray:
        return np.array([float(np.mean(s)) for s in self.samples], dtype=np.float64)


@dataclass(frozen=True)
class RealCase:
    """One measured case: its pool-size curve with every sample, and what the agent saw."""

    workload_id: str
    group: str
    #: cpu, io, lock or mixed.
    kind: str
    host: HostFacts
    profile: WorkloadProfile
    #: "transactions" or "queries": what the curve's throughput counts.
    metric: str
    sizes: FloatArray
    #: Kept samples of each size, in measuring order (one per second).
    samples: tuple[FloatArray, ...]
    #: Mean of each interleaved visit of each size.
    visits: tuple[FloatArray, ...]
    throughput: FloatArray
    latency_ms: FloatArray
    server_cpu_cores: FloatArray
    load_cpu_cores: FloatArray
    secondary: tuple[SecondarySweep, ...] = ()
    #: Cores of the host the load generator ran on (the server may be pinned to fewer).
    host_cores: int = 0

    @property
    def cores(self) -> int:
        return self.host.cpu_count

    @property
    def clients(self) -> int:
        return self.profile.connections

    @property
    def statements_per_unit(self) -> float:
        """Statements per unit of the curve's metric (per transaction, or 1 per query)."""
        if self.metric == "transactions" and self.profile.tps > 0:
            return self.profile.qps / self.profile.tps
        return 1.0

    def profile_against_sweep(self, size: float) -> float:
        """The profile's throughput over the sweep's mean at the size it was measured at: far
        from 1 when the profile window was not typical (a stall, drift)."""
        measured = self.throughput[self.sizes == size]
        if measured.size == 0 or measured[0] <= 0:
            return float("nan")
        profile = self.profile.tps if self.metric == "transactions" else self.profile.qps
        return float(profile / measured[0])

    @property
    def statements_per_s(self) -> FloatArray:
        return self.throughput * self.statements_per_unit

    @property
    def client_cpu_ms(self) -> float:
        """CPU the load generator spent per statement on the server's cores (median over
        sizes). A server pinned to fewer cores than the host shares only what the load could
        not run on the others."""
        spare = max(0, self.host_cores - self.cores)
        competing = np.maximum(self.load_cpu_cores - spare, 0.0)
        per_statement = 1000.0 * competing / np.maximum(self.statements_per_s, 1e-9)
        finite = per_statement[np.isfinite(per_statement)]
        return float(np.median(finite)) if finite.size else 0.0

    @property
    def rounds(self) -> float:
        """CPU bursts per statement: 1 + the pool's waits per statement, as measured."""
        rounds = self.profile.rounds_per_request
        return max(1.0, float(rounds)) if rounds is not None else 1.0

    @property
    def lock_conflict(self) -> float:
        """Row-lock waits per statement, as measured."""
        waits = self.profile.lock_waits_per_s
        if waits is None or self.profile.qps <= 0:
            return 0.0
        return float(waits) / self.profile.qps


def stored_floats(text: object) -> FloatArray:
    """A list column of a sweep dataset (samples, visit means), stored as JSON text."""
    values = json.loads(text) if isinstance(text, str) else []
    return np.array([float(v) for v in values], dtype=np.float64)


def _float_column(rows: pd.DataFrame, name: str) -> FloatArray:
    if name not in rows.columns:
        return np.full(len(rows), math.nan)
    values: FloatArray = rows[name].to_numpy(dtype=np.float64)
    return values


def _secondary(rows: pd.DataFrame) -> tuple[SecondarySweep, ...]:
    sweeps = []
    for knob, knob_rows in rows[rows["knob"] != SIZE_KNOB].groupby("knob", sort=True):
        knob_rows = knob_rows.sort_values("value")
        sweeps.append(
            SecondarySweep(
                knob=str(knob),
                values=knob_rows["value"].to_numpy(dtype=np.float64),
                samples=tuple(stored_floats(t) for t in knob_rows["throughput_samples"]),
            )
        )
    return tuple(sweeps)


def real_cases(dataset: datasets.Dataset, *, only: Sequence[str] = ()) -> list[RealCase]:
    """Every case of a sweep dataset that kept its samples (``only``: these workload ids)."""
    if "throughput_samples" not in dataset.curves.columns:
        raise datasets.DatasetError(
            f"{dataset.name}: curves.parquet has no throughput_samples (not a measured sweep)"
        )
    examples = {e.origin.rsplit(":", 1)[-1]: e for e in datasets.examples(dataset)}
    by_id = dataset.workloads.set_index(dataset.workloads["workload_id"].astype(str))
    metrics = by_id.get("throughput_metric", pd.Series(dtype=str)).astype(str).to_dict()
    kinds = by_id["kind"].astype(str).to_dict()
    host = dataset.manifest.get("description", {}).get("host", {})
    cases = []
    for workload_id, rows in dataset.curves.groupby("workload_id", sort=False):
        name = str(workload_id)
        if only and name not in only:
            continue
        example = examples[name]
        size_rows = rows[rows["knob"] == SIZE_KNOB].sort_values("value")
        cases.append(
            RealCase(
                workload_id=name,
                group=example.group,
                kind=kinds.get(name, ""),
                host=example.host,
                profile=example.profile,
                metric=metrics.get(name, "transactions"),
                sizes=size_rows["value"].to_numpy(dtype=np.float64),
                samples=tuple(stored_floats(t) for t in size_rows["throughput_samples"]),
                visits=tuple(stored_floats(t) for t in size_rows["visit_means"]),
                throughput=size_rows["throughput"].to_numpy(dtype=np.float64),
                latency_ms=_float_column(size_rows, "latency_ms"),
                server_cpu_cores=_float_column(size_rows, "server_cpu_cores"),
                load_cpu_cores=_float_column(size_rows, "load_cpu_cores"),
                secondary=_secondary(rows),
                host_cores=int(host.get("cpu_count") or example.host.cpu_count),
            )
        )
    return cases
