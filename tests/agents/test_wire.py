"""The wire contract: good payloads round-trip, bad ones fail with actionable messages."""

import json
import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from agents import wire
from agents.wire import (
    ClimbReport,
    HostFacts,
    KnobTuple,
    RecommendationRequest,
    RecommendationResponse,
    WorkloadProfile,
)

T0 = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def host(**overrides: Any) -> dict[str, Any]:
    return {
        "hostname": "db-1",
        "engine": "mariadb",
        "engine_version": "10.11.19-MariaDB",
        "cpu_count": 8,
        "memory_bytes": 32 << 30,
    } | overrides


def profile(**overrides: Any) -> dict[str, Any]:
    return {
        "window_s": 30.0,
        "connections": 64,
        "active_connections": 12.5,
        "qps": 18_000.0,
        "tps": 900.0,
        "read_fraction": 0.8,
        "latency_ms": 2.1,
        "cpu_ms_per_request": 0.4,
        "wait_ms_per_request": 1.2,
        "rounds_per_request": 3.0,
        "think_ms": 5.0,
        "io_reads_per_txn": 4.0,
        "fsyncs_per_txn": 1.0,
        "lock_waits_per_s": 3.0,
        "thread_create_ms": 0.1,
        "extras": {"Threadpool_threads": 14.0},
    } | overrides


def report(**overrides: Any) -> dict[str, Any]:
    return {
        "idempotency_key": "3f1c2a9e-6f7b-4b1e-9d2a-0c4e5b6a7d8f",
        "host": host(),
        "profile": profile(),
        "start_tuple": {"engine": "mariadb", "values": {"thread_pool_size": 8}},
        "start_source": "model",
        "start_model_version": "lgbm:3",
        "optimal_tuple": {
            "engine": "mariadb",
            "values": {"thread_pool_size": 24, "thread_pool_oversubscribe": 3},
        },
        "throughput_start": 800.0,
        "throughput_optimal": 1100.0,
        "throughput_default": 790.0,
        "converged": True,
        "samples_to_converge": 17,
        "trace": [
            {
                "t_s": 2.0 * i,
                "knobs": {"thread_pool_size": 8 + i},
                "throughput": 800.0 + 10 * i,
                "latency_ms": 2.0,
                "connections": 64,
                "state": "USUAL",
            }
            for i in range(20)
        ],
        "climber": {"name": "pooltune", "settings": {"wave_period": 4, "eps": 0.05}},
        "started_at": T0.isoformat(),
        "finished_at": (T0 + timedelta(minutes=1)).isoformat(),
    } | overrides


def errors(exc: pytest.ExceptionInfo[ValidationError]) -> str:
    return json.dumps(exc.value.errors(include_url=False), default=str)


def test_report_round_trips_through_json() -> None:
    parsed = ClimbReport.model_validate(report())
    again = ClimbReport.model_validate_json(parsed.model_dump_json())
    assert again == parsed
    assert again.schema_version == wire.SCHEMA_VERSION
    assert again.optimal_tuple["thread_pool_size"] == 24


def test_blocking_coefficient_is_wait_over_service_time() -> None:
    parsed = WorkloadProfile.model_validate(profile())
    assert parsed.blocking_coefficient == pytest.approx(3.0)
    assert (
        WorkloadProfile.model_validate(profile(cpu_ms_per_request=None)).blocking_coefficient
        is None
    )


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_profile_rejects_non_finite_numbers(bad: float) -> None:
    with pytest.raises(ValidationError) as exc:
        WorkloadProfile.model_validate(profile(qps=bad))
    assert "qps" in errors(exc)


def test_profile_rejects_non_finite_extras() -> None:
    with pytest.raises(ValidationError, match=r"extras.x\n  Input should be a finite number"):
        WorkloadProfile.model_validate(profile(extras={"x": math.nan}))
    with pytest.raises(ValidationError, match="at most 200 extras"):
        WorkloadProfile.model_validate(profile(extras={f"k{i}": 1.0 for i in range(201)}))


@pytest.mark.parametrize("field", ["qps", "tps", "latency_ms", "lock_waits_per_s", "think_ms"])
def test_profile_rejects_negative_rates_and_times(field: str) -> None:
    with pytest.raises(ValidationError) as exc:
        WorkloadProfile.model_validate(profile(**{field: -1.0}))
    assert field in errors(exc)
    assert "greater than or equal to 0" in errors(exc)


def test_profile_rejects_more_active_than_open_connections() -> None:
    with pytest.raises(ValidationError, match="cannot exceed connections"):
        WorkloadProfile.model_validate(profile(connections=4, active_connections=40.0))


def test_profile_rejects_unknown_fields() -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        WorkloadProfile.model_validate(profile(qpss=1.0))


def test_unknown_engine_lists_the_known_ones() -> None:
    with pytest.raises(ValidationError) as exc:
        HostFacts.model_validate(host(engine="oracle"))
    assert "'mariadb', 'percona' or 'pgbouncer'" in errors(exc)


def test_knob_value_outside_catalog_bounds_names_the_range() -> None:
    with pytest.raises(
        ValidationError, match=r"thread_pool_size=129 is outside mariadb's bounds \[1, 128\]"
    ):
        KnobTuple.model_validate({"engine": "mariadb", "values": {"thread_pool_size": 129}})


def test_unknown_knob_names_the_known_ones() -> None:
    with pytest.raises(ValidationError, match="not a knob of pgbouncer"):
        KnobTuple.model_validate({"engine": "pgbouncer", "values": {"thread_pool_size": 4}})


def test_report_rejects_tuple_of_another_engine() -> None:
    bad = report(optimal_tuple={"engine": "pgbouncer", "values": {"default_pool_size": 20}})
    with pytest.raises(ValidationError, match=r"optimal_tuple.engine \(pgbouncer\) must match"):
        ClimbReport.model_validate(bad)


def test_report_rejects_trace_longer_than_cap() -> None:
    sample = report()["trace"][0]
    bad = report(trace=[sample] * (wire.MAX_TRACE_SAMPLES + 1))
    with pytest.raises(ValidationError, match=f"at most {wire.MAX_TRACE_SAMPLES} items"):
        ClimbReport.model_validate(bad)


def test_report_rejects_trace_knob_outside_bounds() -> None:
    sample = report()["trace"][0] | {"knobs": {"thread_pool_size": 0}}
    with pytest.raises(ValidationError, match=r"trace\[0\].knobs: thread_pool_size=0"):
        ClimbReport.model_validate(report(trace=[sample]))


@pytest.mark.parametrize(
    "key", ["short", "has space in it", "-leading-dash", "x" * 129, "ключ-ключ"]
)
def test_report_rejects_bad_idempotency_keys(key: str) -> None:
    with pytest.raises(ValidationError, match="idempotency_key must be 8 to 128"):
        ClimbReport.model_validate(report(idempotency_key=key))


def test_report_rejects_naive_timestamps_and_time_travel() -> None:
    with pytest.raises(ValidationError, match="timezone"):
        ClimbReport.model_validate(report(started_at="2026-11-21T12:00:00"))
    with pytest.raises(ValidationError, match="finished_at is before started_at"):
        ClimbReport.model_validate(report(finished_at=(T0 - timedelta(seconds=1)).isoformat()))


def test_converged_report_needs_samples_to_converge() -> None:
    with pytest.raises(ValidationError, match="samples_to_converge"):
        ClimbReport.model_validate(report(samples_to_converge=None))


def test_unknown_schema_version_is_refused() -> None:
    with pytest.raises(ValidationError) as exc:
        ClimbReport.model_validate(report(schema_version=2))
    assert "schema_version" in errors(exc)


def test_recommendation_response_checks_range_and_model_version() -> None:
    good = {
        "start_tuple": {"engine": "mariadb", "values": {"thread_pool_size": 16}},
        "ranges": {"thread_pool_size": {"low": 8, "high": 32}},
        "source": "model",
        "model_version": "lgbm:1",
    }
    parsed = RecommendationResponse.model_validate(good)
    assert RecommendationResponse.model_validate_json(parsed.model_dump_json()) == parsed
    with pytest.raises(ValidationError, match="outside its range"):
        RecommendationResponse.model_validate(
            good | {"ranges": {"thread_pool_size": {"low": 1, "high": 4}}}
        )
    with pytest.raises(ValidationError, match="must name its model_version"):
        RecommendationResponse.model_validate(good | {"model_version": None})
    with pytest.raises(ValidationError, match="low .* is above high"):
        RecommendationResponse.model_validate(
            good | {"ranges": {"thread_pool_size": {"low": 32, "high": 8}}}
        )


def test_recommendation_request_engine_must_match() -> None:
    with pytest.raises(ValidationError, match="current_tuple.engine must match"):
        RecommendationRequest.model_validate(
            {
                "host": host(),
                "profile": profile(),
                "current_tuple": {"engine": "pgbouncer", "values": {"default_pool_size": 5}},
            }
        )


finite = st.floats(min_value=0, max_value=1e9, allow_nan=False, allow_infinity=False)


@given(
    qps=finite,
    tps=finite,
    connections=st.integers(min_value=0, max_value=100_000),
    cpu=st.one_of(st.none(), finite),
    wait=st.one_of(st.none(), finite),
)
def test_any_valid_profile_round_trips(
    qps: float, tps: float, connections: int, cpu: float | None, wait: float | None
) -> None:
    parsed = WorkloadProfile.model_validate(
        profile(
            qps=qps,
            tps=tps,
            connections=connections,
            active_connections=float(connections) / 2,
            cpu_ms_per_request=cpu,
            wait_ms_per_request=wait,
        )
    )
    assert WorkloadProfile.model_validate_json(parsed.model_dump_json()) == parsed


def approval_request(**overrides: Any) -> dict[str, Any]:
    return {
        "idempotency_key": "approval-3f1c2a9e-6f7b",
        "profile": profile(),
        "current_tuple": {"engine": "mariadb", "values": {"thread_pool_size": 8}},
        "recommendation": {
            "start_tuple": {"engine": "mariadb", "values": {"thread_pool_size": 12}},
            "ranges": {"thread_pool_size": {"low": 6, "high": 24}},
            "source": "heuristic",
        },
    } | overrides


def test_approval_request_round_trips_and_names_its_bad_fields() -> None:
    body = wire.ApprovalCreate.model_validate(approval_request(ttl_s=3600))
    again = wire.ApprovalCreate.model_validate_json(body.model_dump_json())
    assert again == body
    with pytest.raises(ValidationError) as exc:
        wire.ApprovalCreate.model_validate(approval_request(idempotency_key="short", ttl_s=5))
    assert "idempotency_key" in errors(exc) and "ttl_s" in errors(exc)


def test_predicted_gain_must_hold_its_estimate_inside_the_interval() -> None:
    assert wire.PredictedGain(estimate=1.18, low=1.05, high=1.31).estimate == 1.18
    with pytest.raises(ValidationError) as exc:
        wire.PredictedGain(estimate=1.5, low=1.05, high=1.31)
    assert "low <= estimate <= high" in errors(exc)
