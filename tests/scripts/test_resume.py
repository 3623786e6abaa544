"""Resuming: stored cases read back whole, done cases are skipped, busy / failed / changed
ones are measured again, and cases of another machine are refused."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from scripts.mariadb_dataset.cases import SIZE, STALL, Case, select_cases
from scripts.mariadb_dataset.catalogs import catalog
from scripts.mariadb_dataset.records import (
    SUPERSEDED_DIR,
    case_dir,
    read_records,
    supersede,
    write_record,
)
from scripts.mariadb_dataset.resume import (
    MachineMismatch,
    case_states,
    check_same_machine,
    needs_measuring,
    noted_differences,
    within_budget,
)
from tests.scripts.factories import HOST, TEST_TIMING, case_record

V2 = catalog("v2")


def _cases(*ids: str) -> list[Case]:
    by_id = {c.workload_id: c for c in V2.cases()}
    return [by_id[i] for i in ids]


def test_a_stored_case_reads_back_with_every_sample_and_its_provenance(tmp_path: Path) -> None:
    (case,) = _cases("stall_mix_cpu-c64")
    record = case_record(case)
    write_record(tmp_path, record)
    (back,) = read_records(tmp_path).values()
    assert back.definition == record.definition and back.host == record.host
    assert back.server == record.server and back.sysbench == record.sysbench
    assert set(back.sweeps) == set(record.sweeps)
    for knob, sweep in record.sweeps.items():
        stored = back.sweeps[knob]
        assert stored.plan == sweep.plan
        assert len(stored.samples) == len(sweep.samples)
        assert [p.value for p in stored.points] == [p.value for p in sweep.points]
        for a, b in zip(stored.points, sweep.points, strict=True):
            assert a.mean == pytest.approx(b.mean, abs=1e-3)
        assert stored.best_within_noise == sweep.best_within_noise
        assert stored.baseline_profile == sweep.baseline_profile
    measured = back.measured(case)
    assert measured.size.knob == SIZE and STALL in measured.secondary


def test_done_cases_are_skipped_and_every_other_one_is_measured(tmp_path: Path) -> None:
    cases = _cases(
        "oltp_point_select-c4",  # done
        "oltp_point_select-c16",  # never measured
        "oltp_point_select-c64",  # busy
        "oltp_point_select-c256",  # sysbench ended early
        "oltp_read_only-c4",  # measured for another timing
        "oltp_read_only-c16",  # done
    )
    write_record(tmp_path, case_record(cases[0]))
    write_record(tmp_path, case_record(cases[2], status="busy", other_cpu=1.2))
    write_record(tmp_path, case_record(cases[3], status="failed"))
    other_timing = dataclasses.replace(TEST_TIMING, dwell_s=4.0)
    write_record(tmp_path, case_record(cases[4], timing=other_timing))
    write_record(tmp_path, case_record(cases[5]))

    states = case_states(cases, read_records(tmp_path), timing=TEST_TIMING, host=HOST)
    assert [s.state for s in states] == ["done", "pending", "busy", "failed", "changed", "done"]
    todo = within_budget(states, TEST_TIMING, max_minutes=None)
    assert [c.workload_id for c in todo] == [c.workload_id for c in cases[1:5]]
    kept_busy = within_budget(states, TEST_TIMING, max_minutes=None, accept_busy=True)
    assert cases[2] not in kept_busy and cases[1] in kept_busy
    assert within_budget(states, TEST_TIMING, max_minutes=None, redo=True) == cases


def test_a_run_budget_takes_the_first_pending_cases_that_fit() -> None:
    cases = select_cases(V2, patterns=["oltp_*"])
    states = case_states(cases, {}, timing=TEST_TIMING, host=HOST)
    one = TEST_TIMING.case_seconds(cases[0]) / 60
    first = within_budget(states, TEST_TIMING, max_minutes=one * 3.5)
    assert 1 <= len(first) <= 3 and first == cases[: len(first)]
    # A budget shorter than one case still measures one.
    assert within_budget(states, TEST_TIMING, max_minutes=0.01) == cases[:1]


def test_the_busy_threshold_is_applied_to_stored_cases_on_every_run(tmp_path: Path) -> None:
    (case,) = _cases("hot_rows-c16")
    write_record(tmp_path, case_record(case, status="done", other_cpu=0.4))
    records = read_records(tmp_path)
    lenient = case_states([case], records, timing=TEST_TIMING, host=HOST, busy_cores=0.5)
    strict = case_states([case], records, timing=TEST_TIMING, host=HOST, busy_cores=0.25)
    assert lenient[0].state == "done" and not needs_measuring(lenient[0])
    assert strict[0].state == "busy" and needs_measuring(strict[0])


@pytest.mark.parametrize(
    ("fact", "value"),
    [
        ("cpu_model", "Intel Xeon Gold 6248"),
        ("cpu_count", 8),
        ("engine_version", "10.6.18-MariaDB"),
        ("sysbench_version", "sysbench 1.0.17"),
        ("hostname", "another-host"),
        ("memory_bytes", 8 * 2**30),
    ],
)
def test_a_case_from_another_machine_is_refused(tmp_path: Path, fact: str, value: object) -> None:
    done, elsewhere = _cases("wait_1ms-c16", "wait_1ms-c64")
    write_record(tmp_path, case_record(done))
    write_record(tmp_path, case_record(elsewhere, host=HOST | {fact: value}))
    states = case_states([done, elsewhere], read_records(tmp_path), timing=TEST_TIMING, host=HOST)
    with pytest.raises(MachineMismatch, match=f"wait_1ms-c64 \\({fact}: {value} → "):
        check_same_machine(states)
    assert check_same_machine(states, allow=True) == [
        f"wait_1ms-c64 ({fact}: {value} → {HOST[fact]})"
    ]


def test_a_foreign_case_that_is_measured_again_does_not_refuse(tmp_path: Path) -> None:
    (case,) = _cases("wait_1ms-c16")
    write_record(tmp_path, case_record(case, host=HOST | {"cpu_model": "Other"}, status="failed"))
    states = case_states([case], read_records(tmp_path), timing=TEST_TIMING, host=HOST)
    assert check_same_machine(states) == []


def test_a_kernel_update_or_a_few_kib_of_memory_is_the_same_machine(tmp_path: Path) -> None:
    (case,) = _cases("wait_1ms-c16")
    recorded = HOST | {"kernel": "6.18.40", "memory_bytes": HOST["memory_bytes"] + 8192}
    write_record(tmp_path, case_record(case, host=recorded))
    records = read_records(tmp_path)
    states = case_states([case], records, timing=TEST_TIMING, host=HOST)
    assert states[0].machine == () and check_same_machine(states) == []
    assert noted_differences(records.values(), HOST) == [f"kernel: 6.18.40 → {HOST['kernel']}"]


def test_a_case_measured_again_keeps_the_old_files_aside(tmp_path: Path) -> None:
    (case,) = _cases("phased-c16")
    write_record(tmp_path, case_record(case, status="busy", other_cpu=2.0))
    moved = supersede(tmp_path, case.workload_id)
    assert moved is not None and moved.parent == tmp_path / SUPERSEDED_DIR
    assert (moved.parent / ".gitignore").read_text() == "*\n"
    assert (moved / "case.json").exists() and not case_dir(tmp_path, case.workload_id).exists()
    assert read_records(tmp_path) == {}
    assert supersede(tmp_path, case.workload_id) is None
