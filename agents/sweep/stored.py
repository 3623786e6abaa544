"""A sweep's result as JSON and back: every point, every sample, the plan and the profiles,
as a dataset's ``case.json`` stores it (scripts/mariadb_dataset/records.py writes it; the
climb benchmark replays it)."""

from __future__ import annotations

import dataclasses
import math
from datetime import datetime
from typing import Any

from agents.knobs import Engine
from agents.sweep.curve import Point, SweepResult, SweepSample, curve_points
from agents.sweep.plan import SweepPlan
from agents.wire import WorkloadProfile

_SAMPLE_FIELDS = tuple(f.name for f in dataclasses.fields(SweepSample))


def _round(value: float | None, digits: int = 4) -> float | None:
    if value is None or not math.isfinite(value):
        return value
    return round(value, digits)


def sweep_to_json(result: SweepResult) -> dict[str, Any]:
    """Everything of ``result`` that the dataset's tables and a later analysis need;
    numbers rounded to 4 decimals (far below the noise)."""
    plan = dataclasses.asdict(result.plan)
    plan["values"] = list(result.plan.values)
    plan["load_pids"] = list(result.plan.load_pids)
    return {
        "engine": result.engine.value,
        "plan": plan,
        "original_tuple": result.original_tuple,
        "restored": result.restored,
        "notes": list(result.notes),
        "started_at": result.started_at.isoformat(),
        "finished_at": result.finished_at.isoformat(),
        "profile": result.profile.model_dump(mode="json") if result.profile else None,
        "baseline_profile": (
            result.baseline_profile.model_dump(mode="json") if result.baseline_profile else None
        ),
        "points": [
            {
                "value": p.value,
                "samples": [_round(v) for v in p.samples],
                "latencies_ms": [_round(v) for v in p.latencies_ms],
                "visit_means": [_round(v) for v in p.visit_means],
                "other_cpu": _round(p.other_cpu),
                "server_cpu": _round(p.server_cpu),
                "load_cpu": _round(p.load_cpu),
            }
            for p in result.points
        ],
        "sample_fields": list(_SAMPLE_FIELDS),
        "samples": [
            [
                _round(v) if isinstance(v, float) else v
                for v in (getattr(s, name) for name in _SAMPLE_FIELDS)
            ]
            for s in result.samples
        ],
    }


def sweep_from_json(data: dict[str, Any]) -> SweepResult:
    """The stored sweep. A paired sweep's points are read again from its samples
    (:func:`curve_points`): the reading of pairs learns from the real servers measured
    (e.g. a reference sunk by the pool before it), and a stored case follows what it
    has learnt; a plain sweep's points are its kept samples as stored."""
    plan_fields = dict(data["plan"])
    plan_fields["values"] = tuple(plan_fields["values"])
    plan_fields["load_pids"] = tuple(plan_fields["load_pids"])
    plan = SweepPlan(**plan_fields)
    fields = data["sample_fields"]
    samples = tuple(SweepSample(**dict(zip(fields, row, strict=True))) for row in data["samples"])
    points = tuple(
        Point(
            value=int(p["value"]),
            samples=tuple(p["samples"]),
            latencies_ms=tuple(p["latencies_ms"]),
            visit_means=tuple(p["visit_means"]),
            other_cpu=p["other_cpu"],
            server_cpu=p["server_cpu"],
            load_cpu=p["load_cpu"],
        )
        for p in data["points"]
    )
    if plan.reference is not None:
        points = curve_points(plan.values, samples, reference=plan.reference)
    return SweepResult(
        engine=Engine(data["engine"]),
        plan=plan,
        original_tuple={k: int(v) for k, v in data["original_tuple"].items()},
        points=points,
        samples=samples,
        started_at=datetime.fromisoformat(data["started_at"]),
        finished_at=datetime.fromisoformat(data["finished_at"]),
        profile=WorkloadProfile.model_validate(data["profile"]) if data["profile"] else None,
        baseline_profile=(
            WorkloadProfile.model_validate(data["baseline_profile"])
            if data["baseline_profile"]
            else None
        ),
        restored=data["restored"],
        notes=tuple(data["notes"]),
    )
