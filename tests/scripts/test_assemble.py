"""Assembling: the finished cases become a dataset the trainer's loader reads."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from scripts.mariadb_dataset.assemble import AssembleError, assemble
from scripts.mariadb_dataset.cases import OVERSUBSCRIBE, SIZE, STALL
from scripts.mariadb_dataset.catalogs import catalog
from scripts.mariadb_dataset.records import read_records, write_record
from scripts.mariadb_dataset.resume import CaseState, case_states
from tests.scripts.factories import HOST, TEST_TIMING, case_record
from trainer.sources.datasets import examples, load_dataset

V2 = catalog("v2")
IDS = ("oltp_read_only-c16", "stall_mix_cpu-c64", "pinned_read_only-c64")


def _stored(
    out: Path,
    *,
    busy: str = "",
    missing: str = "",
    host_of: dict[str, dict[str, Any]] | None = None,
) -> list[CaseState]:
    by_id = {c.workload_id: c for c in V2.cases()}
    cases = [by_id[i] for i in IDS]
    for case in cases:
        if case.workload_id == missing:
            continue
        host = (host_of or {}).get(case.workload_id, HOST)
        other = 1.5 if case.workload_id == busy else 0.05
        write_record(out, case_record(case, host=host, other_cpu=other))
    return case_states(cases, read_records(out), timing=TEST_TIMING, host=HOST)


def _assemble(
    out: Path, states: list[CaseState], **flags: bool
) -> tuple[dict[str, Any], pd.DataFrame]:
    return assemble(
        out,
        name="mariadb-2core-v2",
        catalog=V2,
        timing=TEST_TIMING,
        states=states,
        command="make_mariadb_dataset --dataset v2",
        busy_cores=0.25,
        **flags,
    )


def test_the_assembled_dataset_is_read_by_the_trainer(tmp_path: Path) -> None:
    manifest, _ = _assemble(tmp_path, _stored(tmp_path))
    dataset = load_dataset(tmp_path)
    assert dataset.name == "mariadb-2core-v2" and manifest["workloads"] == 3
    assert list(dataset.workloads["workload_id"]) == list(IDS)
    assert dataset.workloads["quiet"].all()
    by_id = {e.origin.rsplit(":", 1)[1]: e for e in examples(dataset)}
    assert set(by_id) == set(IDS)
    # The size curve has its optimum at 4; the stall-limit sweep beats the default.
    assert by_id["oltp_read_only-c16"].optimal_tuple == {SIZE: 4}
    assert by_id["stall_mix_cpu-c64"].optimal_tuple[STALL] == 10
    assert OVERSUBSCRIBE in by_id["stall_mix_cpu-c64"].optimal_tuple
    # The pinned case: one core, in the group of the load it pins.
    pinned = by_id["pinned_read_only-c64"]
    assert pinned.host.cpu_count == 1 and pinned.group == by_id["oltp_read_only-c16"].group
    curve = dataset.size_curves()["oltp_read_only-c16"]
    assert list(curve.sizes) == [1, 2, 4, 8]
    readme = (tmp_path / "README.md").read_text()
    assert all(i in readme for i in IDS) and "long_short_mix.lua" in readme
    assert manifest["description"]["cases_missing"] == []


def test_assembling_with_cases_missing_needs_partial(tmp_path: Path) -> None:
    states = _stored(tmp_path, missing="stall_mix_cpu-c64")
    with pytest.raises(
        AssembleError, match="1 case\\(s\\) not done yet: stall_mix_cpu-c64 \\(pending\\)"
    ):
        _assemble(tmp_path, states)
    manifest, _ = _assemble(tmp_path, states, partial=True)
    assert manifest["workloads"] == 2
    assert manifest["description"]["cases_missing"] == ["stall_mix_cpu-c64"]
    assert len(load_dataset(tmp_path).workloads) == 2


def test_busy_cases_stay_out_unless_accepted_and_are_marked(tmp_path: Path) -> None:
    states = _stored(tmp_path, busy="oltp_read_only-c16")
    with pytest.raises(AssembleError, match="oltp_read_only-c16 \\(busy\\).*--accept-busy"):
        _assemble(tmp_path, states)
    _assemble(tmp_path, states, accept_busy=True)
    workloads = load_dataset(tmp_path).workloads.set_index("workload_id")
    assert not workloads.loc["oltp_read_only-c16", "quiet"]
    assert workloads.loc["stall_mix_cpu-c64", "quiet"]


def test_cases_from_two_machines_are_not_assembled_silently(tmp_path: Path) -> None:
    other = HOST | {"engine_version": "11.4.2-MariaDB"}
    states = _stored(tmp_path, host_of={"pinned_read_only-c64": other})
    with pytest.raises(AssembleError, match="pinned_read_only-c64 \\(engine_version"):
        _assemble(tmp_path, states)
    manifest, _ = _assemble(tmp_path, states, allow_other_machine=True)
    assert manifest["description"]["mixed_machines"]
    workloads = load_dataset(tmp_path).workloads.set_index("workload_id")
    assert workloads.loc["pinned_read_only-c64", "engine_version"] == "11.4.2-MariaDB"


def test_a_dataset_of_two_hosts_names_both_in_its_readme(tmp_path: Path) -> None:
    other = HOST | {"cpu_model": "Intel(R) Xeon(R) Processor", "kernel": "6.1.0-99"}
    states = _stored(tmp_path, host_of={"pinned_read_only-c64": other})
    manifest, _ = _assemble(tmp_path, states, allow_other_machine=True)
    assert [h["cases"] for h in manifest["description"]["hosts"]] == [2, 1]
    readme = (tmp_path / "README.md").read_text()
    assert f"({HOST['cpu_model']}: 2 cases; Intel(R) Xeon(R) Processor: 1 case)" in readme
    assert f"Linux {HOST['kernel']} … 6.1.0-99 (2 builds;" in readme


def test_a_case_the_catalog_settles_is_stored_settled_and_named(tmp_path: Path) -> None:
    """A case whose queue carries a size's state over (``settle_s``) is measured with a
    longer discard, counts as done only when stored so, and the dataset says which."""
    by_id = {c.workload_id: c for c in V2.cases()}
    plain, settled = by_id[IDS[0]], replace(by_id[IDS[1]], settle_s=3)
    own = TEST_TIMING.for_case(settled)
    assert own == TEST_TIMING.settled(3) != TEST_TIMING
    assert TEST_TIMING.for_case(plain) is TEST_TIMING
    assert TEST_TIMING.size_plan(settled).discard_samples == own.discard_samples
    for case in (plain, settled):
        write_record(tmp_path, case_record(case))
    states = case_states([plain, settled], read_records(tmp_path), timing=TEST_TIMING, host=HOST)
    assert [s.state for s in states] == ["done", "done"]
    # The same case stored at the catalog's timing is measured again, settled.
    unsettled = case_states(
        [replace(plain, settle_s=3)], read_records(tmp_path), timing=TEST_TIMING, host=HOST
    )
    assert unsettled[0].state == "changed"
    manifest, _ = _assemble(tmp_path, states)
    assert manifest["description"]["settled"] == {
        IDS[1]: {"discard_samples": own.discard_samples, "dwell_s": own.dwell_s}
    }
    readme = (tmp_path / "README.md").read_text()
    assert f"`{IDS[1]}` ({own.discard_samples} dropped, {own.dwell_s:g} s visits)" in readme
    sentence = readme.split("Where a load's queue")[1].split("The original tuple")[0]
    assert IDS[1] in sentence and IDS[0] not in sentence
