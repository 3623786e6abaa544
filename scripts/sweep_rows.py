"""Rows of a measured dataset from a sweep (:class:`agents.sweep.SweepResult`), shared by
the MariaDB and the PgBouncer datasets: one row per curve point with every kept sample, the
noise test against the best point, and a point's mean where measured."""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents.hostcpu import memory_total_bytes
from agents.sweep import SweepResult, within_noise


def json_list(values: Sequence[float]) -> str:
    return json.dumps([round(v, 3) for v in values])


def nan_if_none(value: float | None) -> float:
    return math.nan if value is None else float(value)


def curve_rows(workload_id: str, result: SweepResult) -> list[dict[str, Any]]:
    """``curves.parquet`` rows of one sweep (trainer/sources/datasets.py's columns, plus the
    samples and the CPU use of each point)."""
    return [
        {
            "workload_id": workload_id,
            "knob": result.knob,
            "value": point.value,
            "throughput": point.mean,
            "throughput_std": point.std,
            "samples": point.count,
            "latency_ms": point.latency_ms if point.latency_ms is not None else math.nan,
            "throughput_cv": point.cv,
            "throughput_samples": json_list(point.samples),
            "visit_means": json_list(point.visit_means),
            "server_cpu_cores": nan_if_none(point.server_cpu),
            "load_cpu_cores": nan_if_none(point.load_cpu),
            "other_cpu_cores": nan_if_none(point.other_cpu),
        }
        for point in result.points
    ]


def below_best_beyond_noise(result: SweepResult, value: int) -> bool:
    """Whether ``value``'s mean is below the best mean by more than the noise."""
    best = result.best_value
    try:
        point = result.point(value)
    except KeyError:
        return False
    return best is not None and not within_noise(point, result.point(best))


def mean_at(result: SweepResult, value: int) -> float:
    """The mean throughput at ``value`` (NaN when the grid does not have it)."""
    try:
        return result.point(value).mean
    except KeyError:
        return math.nan


def machine_facts() -> dict[str, Any]:
    """Cores, CPU model, memory and kernel of this host (what a measured dataset was
    measured on)."""
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "cpu_count": os.cpu_count() or 1,
        "cpu_model": model,
        "memory_bytes": memory_total_bytes() or 0,
        "kernel": platform.release(),
    }
