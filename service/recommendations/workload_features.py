"""The features a tuple model reads: host facts and a workload profile as a float vector.

Raw profile fields, what queueing theory says about the optimum (blocking coefficient,
Little's law, CPU utilisation, contention), and ``log1p`` of most; unknown fields stay NaN.
The trainer learns on the same matrix the service predicts from. Why each feature:
docs/trainer.md ("Features").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np
from numpy.typing import NDArray

from agents.heuristic import theory_pool_size
from agents.wire import HostFacts, WorkloadProfile

#: Raw profile fields used as features, in order.
RAW_FIELDS: tuple[str, ...] = (
    "connections",
    "active_connections",
    "qps",
    "tps",
    "read_fraction",
    "latency_ms",
    "cpu_ms_per_request",
    "wait_ms_per_request",
    "rounds_per_request",
    "think_ms",
    "io_reads_per_txn",
    "fsyncs_per_txn",
    "lock_waits_per_s",
    "thread_create_ms",
    "sync_ms_per_request",
)

DERIVED: tuple[str, ...] = (
    "cpu_count",
    "blocking_coefficient",
    "heuristic_size",
    "little_concurrency",
    "cpu_utilisation",
    "connections_per_core",
    "active_per_core",
    "queries_per_txn",
    "interactive_concurrency",
    "sync_share",
    "coherency_estimate",
)

FEATURES: tuple[str, ...] = (
    RAW_FIELDS
    + DERIVED
    + tuple(f"log_{name}" for name in RAW_FIELDS + DERIVED if name not in {"read_fraction"})
)


def _nan(value: float | int | None) -> float:
    return float("nan") if value is None else float(value)


def _ratio(numerator: float, denominator: float) -> float:
    if math.isnan(numerator) or math.isnan(denominator) or denominator <= 0:
        return float("nan")
    return numerator / denominator


def _interactive_concurrency(row: Mapping[str, float]) -> float:
    cpu_ms, wait_ms, think_ms = (
        row["cpu_ms_per_request"],
        row["wait_ms_per_request"],
        row["think_ms"],
    )
    request_ms = cpu_ms + wait_ms if not math.isnan(cpu_ms + wait_ms) else row["latency_ms"]
    if math.isnan(request_ms) or math.isnan(think_ms) or request_ms + think_ms <= 0:
        return float("nan")
    return row["connections"] * request_ms / (request_ms + think_ms)


def feature_row(host: HostFacts, profile: WorkloadProfile) -> dict[str, float]:
    """One workload's features as a flat mapping name → float (NaN where unknown)."""
    row = {name: _nan(getattr(profile, name)) for name in RAW_FIELDS}
    cores = float(host.cpu_count)
    cpu_ms = row["cpu_ms_per_request"]
    # W/S as the wire contract defines it (lock waits where measured left out).
    blocking = _nan(profile.blocking_coefficient)
    # Requests per second at the granularity the CPU and wait times are measured in.
    request_rate = row["qps"] if row["qps"] > 0 else row["tps"]
    row.update(
        cpu_count=cores,
        blocking_coefficient=blocking,
        heuristic_size=(
            theory_pool_size(host.cpu_count, blocking, profile)
            if not math.isnan(blocking)
            else float("nan")
        ),
        little_concurrency=request_rate * row["latency_ms"] / 1000.0,
        cpu_utilisation=_ratio(request_rate * cpu_ms / 1000.0, cores),
        connections_per_core=row["connections"] / cores,
        active_per_core=row["active_connections"] / cores,
        queries_per_txn=_ratio(row["qps"], row["tps"]),
        interactive_concurrency=_interactive_concurrency(row),
    )
    # Contention: the share of a request's CPU burst spent synchronising, and what the
    # universal scalability law makes of it: share ≈ σ(r−1) + κ·r(r−1) with r threads running
    # (busy cores by the CPU time), so share / r(r−1) estimates the crosstalk κ that sets how
    # fast throughput falls past the peak.
    sync_share = _ratio(row["sync_ms_per_request"], cpu_ms)
    running = row["cpu_utilisation"] * cores
    row["sync_share"] = sync_share
    row["coherency_estimate"] = (
        sync_share / (running * max(running - 1.0, 1.0))
        if not math.isnan(sync_share) and not math.isnan(running) and running > 0
        else float("nan")
    )
    for name in RAW_FIELDS + DERIVED:
        if name == "read_fraction":
            continue
        value = row[name]
        row[f"log_{name}"] = math.log1p(value) if value >= 0 else float("nan")
    return row


def feature_matrix(rows: Iterable[tuple[HostFacts, WorkloadProfile]]) -> NDArray[np.float64]:
    """Features of many workloads as a float matrix, columns in :data:`FEATURES` order."""
    matrix = [
        [feature[name] for name in FEATURES]
        for feature in (feature_row(host, profile) for host, profile in rows)
    ]
    return np.array(matrix, dtype=np.float64).reshape(-1, len(FEATURES))


_HEURISTIC = FEATURES.index("heuristic_size")
_CORES = FEATURES.index("cpu_count")
_INTERACTIVE = FEATURES.index("interactive_concurrency")
#: Square-root staffing: a pool for requests that arrive at random needs about
#: R + β·√R slots for a mean of R in flight, or requests queue behind the pool's edge.
INTERACTIVE_HEADROOM = 2.0


def size_offset(matrix: NDArray[np.float64]) -> NDArray[np.float64]:
    """log2 of the size theory gives: cores·(1 + W/S) (cores where W/S is unknown), capped,
    where think time is known, by the interactive concurrency R staffed with headroom
    (R + β·√R). Size models learn the residual over it (docs/trainer.md, "Size offset")."""
    heuristic = matrix[:, _HEURISTIC]
    base = np.where(np.isfinite(heuristic), heuristic, matrix[:, _CORES])
    known = matrix[:, _INTERACTIVE]
    interactive = np.maximum(known, 1.0)
    staffed = interactive + INTERACTIVE_HEADROOM * np.sqrt(interactive)
    base = np.where(np.isfinite(known), np.minimum(base, staffed), base)
    return np.asarray(np.log2(np.clip(base, 1.0, None)), dtype=np.float64)
