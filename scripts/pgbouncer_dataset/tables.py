"""The dataset's rows: a measured case as its ``workloads.parquet`` row and its
``curves.parquet`` rows (``trainer/sources/datasets.py``'s format), and the two tables
from every stored case."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from agents.pgbouncer.profile import (
    OPEN_SERVER_STATES,
    busy_connections,
    held_latency_ms,
    open_server_connections,
)
from agents.profile import off_cpu_wait_ms, think_time_ms
from agents.wire.workload import HOST_CPU_BUSY_EXTRA, POOL_CONNECTIONS_EXTRA
from scripts.pgbouncer_dataset.cases import DEFAULT_SIZE, SIZE
from scripts.pgbouncer_dataset.measure import MeasuredCase
from scripts.sweep_rows import below_best_beyond_noise, curve_rows, mean_at, nan_if_none
from trainer.sources.datasets import CURVE_COLUMNS


def workload_row(measured: MeasuredCase, machine: Mapping[str, Any]) -> dict[str, Any]:
    """One case's row: the profile at the default size, the best size, the analysis columns."""
    case, sweep = measured.case, measured.sweep
    profile = sweep.baseline_profile or sweep.profile
    assert profile is not None, f"{case.case_id}: no profile"
    row: dict[str, Any] = {
        "workload_id": case.case_id,
        "group": case.workload.name,
        "kind": case.workload.kind,
        "engine": "pgbouncer",
        "engine_version": measured.engine_version,
        "cpu_count": int(machine["cpu_count"]),
        "memory_bytes": int(machine["memory_bytes"]),
    }
    for name, value in profile.model_dump().items():
        row[name] = json.dumps(value) if name == "extras" else value
    peak = sweep.best_mean
    default = mean_at(sweep, DEFAULT_SIZE)
    rule_of_thumb = 2 * int(machine["cpu_count"]) + 1
    row |= {
        f"best_{SIZE}": sweep.best_within_noise,
        "knee_size": sweep.knee,
        "peak_throughput": peak,
        "default_throughput": default,
        # Analysis columns (not features).
        "workload": case.workload.name,
        "pool_mode": case.pool_mode,
        "clients": case.clients,
        "pgbench_script": case.workload.script.builtin or case.workload.script.name,
        "throughput_metric": "transactions",
        "best_size_raw": sweep.best_value,
        "gain_over_default": peak / default - 1.0 if default > 0 else math.nan,
        "rule_of_thumb_size": rule_of_thumb,
        "noise_cv": sweep.noise,
        "differs_beyond_noise": below_best_beyond_noise(sweep, DEFAULT_SIZE),
        "other_cpu_cores": nan_if_none(sweep.other_cpu),
        "other_cpu_before_cores": nan_if_none(measured.other_cpu_before),
        "pgbench_ok": measured.pgbench_ok,
        "pgbench_command": measured.pgbench_command,
        "measured_at": sweep.started_at.isoformat(timespec="seconds"),
    }
    return row


def case_rows(measured: MeasuredCase, machine: Mapping[str, Any]) -> dict[str, Any]:
    """What the case store keeps of a case: its rows and every sample of the sweep."""
    return {
        "workload_row": workload_row(measured, machine),
        "curve_rows": curve_rows(measured.case.case_id, measured.sweep),
        "samples": [
            {
                "size": s.value,
                "repeat": s.repeat,
                "index": s.index,
                "t_s": round(s.t_s, 3),
                "throughput": round(s.throughput, 3),
                "latency_ms": s.latency_ms,
                "discarded": s.discarded,
                "other_cpu": s.other_cpu,
            }
            for s in measured.sweep.samples
        ],
        "notes": list(measured.sweep.notes),
    }


def held_profile_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A workload row whose profile took PgBouncer's transaction time as the latency (the
    agent before it subtracted the pool's queue) re-derived, from the row's own recorded
    pool wait and queue, as the agent derives it now; a current row is returned as is."""
    extras = json.loads(row["extras"]) if row.get("extras") else {}
    if "client_latency_ms" in extras or row.get("latency_ms") is None:
        return dict(row)
    client_ms = float(row["latency_ms"])
    latency = held_latency_ms(client_ms, extras.get("pool_wait_ms_per_txn"))
    active = busy_connections(
        tps=float(row["tps"]),
        latency_ms=latency,
        connections=float(row["connections"]),
        waiting=float(extras.get("cl_waiting_mean", 0.0)),
    )
    return dict(row) | {
        "latency_ms": latency,
        "wait_ms_per_request": off_cpu_wait_ms(latency, row.get("cpu_ms_per_request")),
        "active_connections": active,
        "think_ms": think_time_ms(float(row["connections"]), active or 0.0, float(row["tps"])),
        "extras": json.dumps(extras | {"client_latency_ms": client_ms}),
    }


def saturation_profile_row(
    row: Mapping[str, Any], curve: Iterable[Mapping[str, Any]]
) -> dict[str, Any]:
    """A workload row measured before the profile read the host's busy CPU: its
    ``host_cpu_busy`` taken from the case's own sweep at the default size (PostgreSQL, the
    load and every other process, in cores) and its open pool connections from the recorded
    server connection means; a row that has them is returned as is."""
    extras = json.loads(row["extras"]) if row.get("extras") else {}
    if HOST_CPU_BUSY_EXTRA in extras:
        return dict(row)
    added: dict[str, float] = {}
    at_default = [r for r in curve if int(r["value"]) == DEFAULT_SIZE]
    if at_default:
        parts = [
            at_default[0].get(k) for k in ("server_cpu_cores", "load_cpu_cores", "other_cpu_cores")
        ]
        if all(p is not None and math.isfinite(float(p)) for p in parts):
            added[HOST_CPU_BUSY_EXTRA] = sum(float(p) for p in parts if p is not None)
    open_now = open_server_connections([extras.get(f"{s}_mean") for s in OPEN_SERVER_STATES])
    if POOL_CONNECTIONS_EXTRA not in extras and open_now is not None:
        added[POOL_CONNECTIONS_EXTRA] = open_now
    return dict(row) | {"extras": json.dumps(extras | added)}


def current_profile_row(document: Mapping[str, Any]) -> dict[str, Any]:
    """A stored case's workload row with its profile as the agent derives it now."""
    row = held_profile_row(document["workload_row"])
    return saturation_profile_row(row, document["curve_rows"])


def build_tables(documents: Iterable[Mapping[str, Any]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``workloads`` and ``curves`` from stored cases, in the order given."""
    documents = list(documents)
    workloads = pd.DataFrame.from_records([current_profile_row(d) for d in documents])
    for name in (f"best_{SIZE}", "knee_size", "best_size_raw"):
        workloads[name] = workloads[name].astype("Int64")
    curves = pd.DataFrame.from_records([row for d in documents for row in d["curve_rows"]])
    curves = curves.astype({"value": "int32", "samples": "int16"})
    missing = [c for c in CURVE_COLUMNS if c not in curves.columns]
    assert not missing, missing
    return workloads, curves
