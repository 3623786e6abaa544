"""scripts/make_pgbouncer_dataset.py: the case plan, and a real measured case written,
skipped on a rerun, loadable as a dataset, and never mixed with another machine's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripts import make_pgbouncer_dataset
from scripts.pgbouncer_dataset.cases import (
    DEFAULT_SIZE,
    FULL_TIMING,
    POOL_MODES,
    SIZE_GRID,
    WORKLOADS,
    full_cases,
    select_cases,
)
from trainer.sources import datasets


def test_the_plan_covers_the_workloads_modes_and_client_range() -> None:
    cases = full_cases()
    assert len(cases) >= 30
    assert len({case.case_id for case in cases}) == len(cases)
    assert {case.workload.name for case in cases} == set(WORKLOADS)
    assert {case.pool_mode for case in cases} == set(POOL_MODES)
    assert min(case.clients for case in cases) == 8
    assert max(case.clients for case in cases) == 512
    # Every grid has the default (the dataset's default throughput) and stops at 2 × clients.
    for case in cases:
        grid = case.grid(SIZE_GRID)
        assert DEFAULT_SIZE in grid
        assert max(grid) <= max(DEFAULT_SIZE, 2 * case.clients)
    minutes = sum(FULL_TIMING.case_seconds(case) for case in cases) / 60
    assert 60 < minutes < 150


def test_selection_narrows_and_refuses_unknown_names() -> None:
    assert [c.case_id for c in select_cases(quick=True)] == [
        "select_only-tx-c16",
        "sleep_5ms-session-c16",
    ]
    chosen = select_cases(quick=False, workloads=["scan"], modes=["session"])
    assert {c.case_id for c in chosen} == {"scan-session-c16", "scan-session-c128"}
    with pytest.raises(ValueError, match="unknown \\['nosuch'\\]"):
        select_cases(quick=False, workloads=["nosuch"])


@pytest.mark.slow
@pytest.mark.pgbouncer
def test_a_case_is_stored_skipped_on_a_rerun_and_never_mixed(tmp_path: Path) -> None:
    out = tmp_path / "dataset"
    argv = ["--quick", "--cases", "select_only", "--out", str(out)]
    assert make_pgbouncer_dataset.main([*argv, "--work-dir", str(tmp_path / "work")]) == 0
    stored = out / "cases" / "select_only-tx-c16.json"
    document = json.loads(stored.read_text())
    assert document["machine"]["pgbouncer_version"].startswith("PgBouncer 1.")
    kept = [s for s in document["samples"] if not s["discarded"]]
    assert {s["size"] for s in kept} == {2, 8, 20}
    assert all(s["throughput"] > 0 for s in kept)

    dataset = datasets.load_dataset(out)
    (example,) = datasets.examples(dataset)
    assert example.engine.value == "pgbouncer"
    assert example.profile.connections == 16 and example.profile.tps > 0
    assert example.optimal_tuple["default_pool_size"] in (2, 8, 20)
    assert example.curve is not None and list(example.curve.sizes) == [2, 8, 20]

    # A rerun measures nothing (the file is untouched) and rewrites the same dataset.
    before = stored.stat().st_mtime_ns
    assert make_pgbouncer_dataset.main(argv) == 0
    assert stored.stat().st_mtime_ns == before
    # Cases from another machine are refused, never mixed.
    document["machine"]["cpu_model"] = "another CPU"
    stored.write_text(json.dumps(document))
    assert make_pgbouncer_dataset.main(argv) == 2
