"""scripts/pgbouncer_dataset/tables.py: stored cases re-derived as the agent profiles now."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.heuristic import heuristic_pool_size
from agents.wire import HostFacts, WorkloadProfile
from agents.wire.workload import HOST_CPU_BUSY_EXTRA, POOL_CONNECTIONS_EXTRA
from scripts.pgbouncer_dataset.tables import current_profile_row

CASES = Path(__file__).parents[2] / "datasets" / "pgbouncer-2core-v1" / "cases"


def stored(case_id: str) -> dict:
    return json.loads((CASES / f"{case_id}.json").read_text())


def profile_of(row: dict) -> WorkloadProfile:
    fields = set(WorkloadProfile.model_fields)
    values = {k: v for k, v in row.items() if k in fields and v is not None}
    values["extras"] = json.loads(row["extras"])
    return WorkloadProfile.model_validate(values)


def test_a_stored_case_gains_the_held_time_and_the_host_cpu() -> None:
    document = stored("select_only-tx-c512")
    old = json.loads(document["workload_row"]["extras"])
    assert HOST_CPU_BUSY_EXTRA not in old
    row = current_profile_row(document)
    extras = json.loads(row["extras"])
    at_default = next(r for r in document["curve_rows"] if r["value"] == 20)
    host_busy = sum(
        at_default[k] for k in ("server_cpu_cores", "load_cpu_cores", "other_cpu_cores")
    )
    assert extras[HOST_CPU_BUSY_EXTRA] == pytest.approx(host_busy)
    assert extras[POOL_CONNECTIONS_EXTRA] == pytest.approx(20.0)
    # PgBouncer's transaction time less the pool's queue: the time a connection is held.
    assert row["latency_ms"] == pytest.approx(
        document["workload_row"]["latency_ms"] - old["pool_wait_ms_per_txn"]
    )
    assert current_profile_row({**document, "workload_row": row}) == row  # idempotent


def test_the_saturated_select_only_case_starts_no_wider_than_its_pool() -> None:
    row = current_profile_row(stored("select_only-tx-c512"))
    host = HostFacts(
        hostname="h", engine="pgbouncer", engine_version="1.18", cpu_count=2, memory_bytes=1 << 30
    )
    profile = profile_of(row)
    assert profile.blocking_coefficient is not None and profile.blocking_coefficient > 15
    assert heuristic_pool_size(host, profile) == 20
    # The same run-queue W/S with the CPUs not saturated would ask for 35.
    spare = profile.model_copy(update={"extras": {**profile.extras, HOST_CPU_BUSY_EXTRA: 1.0}})
    assert heuristic_pool_size(host, spare) == 35
