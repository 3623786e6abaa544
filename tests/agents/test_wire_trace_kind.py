"""TraceSample.kind / sweep_knob and ClimberInfo.workload_group: validated, and absent from
the JSON of a payload that does not use them (an older agent's report hashes as before)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from agents.wire import ClimberInfo, ClimbReport, TraceKind, TraceSample

from .test_wire import report


def sample(**overrides: Any) -> dict[str, Any]:
    return {
        "t_s": 0.0,
        "knobs": {"thread_pool_size": 8, "thread_pool_oversubscribe": 3},
        "throughput": 100.0,
        "connections": 16,
    } | overrides


def test_samples_are_climb_samples_unless_told() -> None:
    assert TraceSample.model_validate(sample()).kind == TraceKind.CLIMB
    swept = TraceSample.model_validate(sample(kind="sweep", sweep_knob="thread_pool_size"))
    assert (swept.kind, swept.sweep_knob) == (TraceKind.SWEEP, "thread_pool_size")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"kind": "sweep"}, "must name its sweep_knob"),
        ({"kind": "sweep", "sweep_knob": "thread_pool_stall_limit"}, "not one of the sample"),
        ({"sweep_knob": "thread_pool_size"}, "only for trace samples of kind 'sweep'"),
        ({"kind": "sweep", "sweep_knob": "thread_pool_size\x00"}, "NUL"),
        ({"kind": "sweep", "sweep_knob": "x" * 101}, "at most 100"),
        ({"kind": "jump"}, "'climb' or 'sweep'"),
    ],
)
def test_bad_sweep_samples_name_the_problem(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        TraceSample.model_validate(sample(**overrides))


@pytest.mark.parametrize(
    ("group", "message"),
    [("", "at least 1"), ("g" * 129, "at most 128"), ("a\x00b", "NUL")],
)
def test_bad_workload_groups_are_refused(group: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ClimberInfo(name="dataset", workload_group=group)


def test_a_report_without_the_new_fields_serialises_as_before() -> None:
    """payload_sha256 hashes model_dump_json(): a retried upload from an agent that knows
    neither field must produce the same JSON, key for key, as before they existed."""
    payload = report()
    dumped = json.loads(ClimbReport.model_validate(payload).model_dump_json())
    assert set(dumped["climber"]) == {"name", "version", "settings"}
    before = {"t_s", "knobs", "throughput", "latency_ms", "connections", "state"}
    assert all(set(s) == before for s in dumped["trace"])


def test_a_sweep_report_round_trips_with_its_fields() -> None:
    payload = report()
    payload["trace"] = [
        sample(t_s=float(i), kind="sweep", sweep_knob="thread_pool_size") for i in range(3)
    ]
    payload["climber"] = {"name": "dataset", "workload_group": "sim-v1:g17"}
    parsed = ClimbReport.model_validate(payload)
    again = ClimbReport.model_validate_json(parsed.model_dump_json())
    assert again == parsed
    assert again.climber.workload_group == "sim-v1:g17"
    assert {s.kind for s in again.trace} == {TraceKind.SWEEP}


def test_a_sweep_knob_must_be_a_knob_of_the_engine() -> None:
    payload = report()
    payload["trace"] = [sample(knobs={"default_pool_size": 5}, kind="sweep")]
    payload["trace"][0]["sweep_knob"] = "default_pool_size"
    with pytest.raises(ValidationError, match="default_pool_size"):
        ClimbReport.model_validate(payload)
