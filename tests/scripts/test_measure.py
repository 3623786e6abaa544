"""The runner on a real MariaDB under sysbench: a measured case is stored with its
provenance the moment it ends, and the next run finds it done."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import pytest

from lab.mariadb import BINLOG_SUFFIX, release_of
from scripts.mariadb_dataset.cases import OVERSUBSCRIBE, SIZE, STALL, Timing, select_cases
from scripts.mariadb_dataset.catalogs import catalog
from scripts.mariadb_dataset.host import host_facts
from scripts.mariadb_dataset.records import case_dir, read_records
from scripts.mariadb_dataset.resume import case_states, within_budget
from scripts.mariadb_dataset.runner import measure_cases

pytestmark = [pytest.mark.slow, pytest.mark.mariadb]

#: About 15 s of measuring: two sizes once, then two oversubscribe values and one stall limit.
SHORT = Timing(
    dwell_s=2.0,
    sample_period_s=1.0,
    discard_samples=1,
    repeats=1,
    secondary_repeats=1,
    baseline_s=2.0,
    warmup_s=1.0,
    size_grid=(1, 2),
    oversubscribe_grid=(3, 10),
    stall_grid=(500,),
)


def test_a_measured_case_is_stored_and_found_done_by_the_next_run(tmp_path: Path) -> None:
    (case,) = select_cases(catalog("v2"), patterns=["oltp_point_select-c4"])
    case = dataclasses.replace(case, secondary=True)
    host = host_facts()
    written = measure_cases(
        [case],
        dataset="mariadb-2core-v2",
        out=tmp_path / "out",
        timing=SHORT,
        host=host,
        work_dir=tmp_path / "work",
        stop=threading.Event(),
        busy_cores=64.0,  # a shared test machine: judge nothing busy here
        command="test",
    )
    assert [r.workload_id for r in written] == [case.workload_id]
    files = {p.name for p in case_dir(tmp_path / "out", case.workload_id).iterdir()}
    assert {"case.json", "sysbench.log", f"{SIZE}.csv", f"{STALL}-samples.csv"} <= files

    (record,) = read_records(tmp_path / "out").values()
    assert record.status == "done"
    assert record.host["engine_version"] == host["engine_version"] != ""
    assert record.server["name"] == "main"
    assert "--thread-handling=pool-of-threads" in record.server["command_line"]
    assert "--threads=4" in record.sysbench["command"] and record.sysbench["ok"]
    assert record.other_cpu["mean_cores"] is not None and record.other_cpu["quiet"]
    size = record.sweeps[SIZE]
    assert [p.value for p in size.points] == [1, 2] and all(p.mean > 0 for p in size.points)
    assert size.baseline_profile is not None and size.baseline_profile.connections >= 4
    assert [p.value for p in record.sweeps[OVERSUBSCRIBE].points] == [3, 10]
    assert size.restored == {SIZE: 2}

    stored = read_records(tmp_path / "out")
    states = case_states([case], stored, timing=SHORT, host=host, busy_cores=64.0)
    assert states[0].state == "done"
    assert within_budget(states, SHORT, max_minutes=None) == []


def test_a_server_with_binary_logging_is_the_same_release(tmp_path: Path) -> None:
    """With ``--log-bin`` VERSION() ends in ``-log``: the case keeps that report as the
    server's, and the binary's release as the machine fact every case is compared on."""
    (case,) = select_cases(catalog("v2"), patterns=["fsync_write_only-c4"])
    host = host_facts()
    reported: list[str] = []
    (record,) = measure_cases(
        [case],
        dataset="mariadb-2core-v2",
        out=tmp_path / "out",
        timing=dataclasses.replace(SHORT, size_grid=(2,)),
        host=host,
        work_dir=tmp_path / "work",
        stop=threading.Event(),
        busy_cores=64.0,
        command="test",
        on_engine_version=reported.append,
    )
    assert [release_of(v) for v in reported] == [host["engine_version"]]
    assert record.server["version"] == host["engine_version"] + BINLOG_SUFFIX
    assert record.host["engine_version"] == host["engine_version"]
    assert "--log-bin=binlog" in " ".join(record.server["command_line"])


def test_a_server_that_dies_leaves_its_log_and_the_next_case_gets_a_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lab server is killed during the first case: that case fails with the server's
    error log kept in the work directory, and the second case runs on a server started
    again."""
    from scripts.mariadb_dataset import runner
    from scripts.mariadb_dataset.measure import measure_case as real

    first, second = select_cases(
        catalog("v2"), patterns=["oltp_point_select-c4", "oltp_point_select-c16"]
    )
    pids: list[int] = []

    def dying(server, case, timing, **kwargs):  # type: ignore[no-untyped-def]
        pids.append(server.server.process.pid)
        if case is first:
            server.server.process.kill()
            server.server.process.wait()
            raise RuntimeError("lost connection to the server")
        return real(server, case, timing, **kwargs)

    monkeypatch.setattr(runner, "measure_case", dying)
    written = measure_cases(
        [first, second],
        dataset="mariadb-2core-v2",
        out=tmp_path / "out",
        timing=dataclasses.replace(SHORT, size_grid=(2,)),
        host=host_facts(),
        work_dir=tmp_path / "work",
        stop=threading.Event(),
        busy_cores=64.0,
        command="test",
    )
    assert [r.workload_id for r in written] == [second.workload_id]
    assert len(set(pids)) == 2
    kept = tmp_path / "work" / f"{first.workload_id}.mariadb-error.log"
    assert "ready for connections" in kept.read_text()
