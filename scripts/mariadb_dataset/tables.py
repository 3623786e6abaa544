"""The dataset's two tables from the stored cases: ``workloads`` (one row per case: the
profile, the best tuple, the analysis columns) and ``curves`` (one row per curve point), in
``trainer/sources/datasets.py``'s format."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from agents import knobs
from agents.sweep import SweepResult, within_noise
from scripts.mariadb_dataset.cases import OVERSUBSCRIBE, SIZE, STALL, Case
from scripts.mariadb_dataset.records import CaseRecord
from scripts.sweep_rows import below_best_beyond_noise, curve_rows, mean_at, nan_if_none
from trainer.sources.datasets import CURVE_COLUMNS


def secondary_best(result: SweepResult, default: int) -> int:
    """The default unless another value beats it by more than the noise."""
    best = result.best_value
    assert best is not None
    try:
        default_point = result.point(default)
    except KeyError:
        return best
    return default if within_noise(default_point, result.point(best)) else best


def workload_row(record: CaseRecord, case: Case) -> dict[str, Any]:
    result = record.measured(case)
    host = record.host
    size = result.size
    cpu_count = 1 if case.workload.pinned else int(host["cpu_count"])
    default_size = knobs.knob("mariadb", SIZE).default_for(cpu_count)
    profile = size.baseline_profile or size.profile
    assert profile is not None, f"{case.workload_id}: no profile"
    row: dict[str, Any] = {
        "workload_id": case.workload_id,
        "group": case.workload.group_name,
        "kind": case.workload.kind,
        "engine": "mariadb",
        "engine_version": host["engine_version"],
        "cpu_count": cpu_count,
        "memory_bytes": host["memory_bytes"],
    }
    for name, value in profile.model_dump().items():
        row[name] = json.dumps(value) if name == "extras" else value
    peak = size.best_mean
    size2 = mean_at(size, 2)
    row |= {
        f"best_{SIZE}": size.best_within_noise,
        f"best_{OVERSUBSCRIBE}": (
            secondary_best(result.secondary[OVERSUBSCRIBE], 3)
            if OVERSUBSCRIBE in result.secondary
            else None
        ),
        f"best_{STALL}": (
            secondary_best(result.secondary[STALL], 500) if STALL in result.secondary else None
        ),
        "knee_size": size.knee,
        "peak_throughput": peak,
        "default_throughput": mean_at(size, default_size),
        # Analysis columns (not features).
        "workload": case.workload.name,
        "sysbench_test": Path(case.workload.test).name,
        "clients": case.clients,
        "pinned_to_one_core": case.workload.pinned,
        "throughput_metric": case.workload.metric,
        "best_size_raw": size.best_value,
        "throughput_size2": size2,
        "gain_over_size2": peak / size2 - 1.0 if size2 > 0 else math.nan,
        "noise_cv": size.noise,
        "differs_beyond_noise": below_best_beyond_noise(size, 2),
        "other_cpu_cores": nan_if_none(size.other_cpu),
        "sysbench_ok": result.sysbench_ok,
        "sysbench_command": result.sysbench_command,
        "measured_at": size.started_at.isoformat(timespec="seconds"),
        "server": record.server.get("name", case.workload.server),
    }
    return row


def build_tables(
    stored: Sequence[tuple[CaseRecord, Case]],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both tables from stored cases, each with the catalog case it measured."""
    rows = [workload_row(record, case) for record, case in stored]
    points: list[dict[str, Any]] = []
    for record, _case in stored:
        for sweep in record.sweeps.values():
            points += curve_rows(record.workload_id, sweep)
    workloads = pd.DataFrame.from_records(rows)
    for name in (f"best_{OVERSUBSCRIBE}", f"best_{STALL}", f"best_{SIZE}", "knee_size"):
        workloads[name] = workloads[name].astype("Int64")
    curves = pd.DataFrame.from_records(points)
    curves = curves.astype({"value": "int32", "samples": "int16"})
    missing = [c for c in CURVE_COLUMNS if c not in curves.columns]
    assert not missing, missing
    return workloads, curves
