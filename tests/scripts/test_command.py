"""``python -m scripts.make_mariadb_dataset`` on stored cases: ``--list``, the refusal of
another machine's cases, and assembling a finished catalog without measuring anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts import make_mariadb_dataset
from scripts.mariadb_dataset.cases import FULL_TIMING, QUICK_TIMING, select_cases
from scripts.mariadb_dataset.catalogs import catalog
from scripts.mariadb_dataset.host import host_facts
from scripts.mariadb_dataset.records import write_record
from tests.scripts.factories import case_record
from trainer.sources.datasets import load_dataset

V2 = catalog("v2")


@pytest.fixture(scope="module")
def this_host() -> dict[str, object]:
    return host_facts()


def test_list_shows_each_state_and_the_chunk_plan(
    tmp_path: Path, this_host: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    done, busy = select_cases(V2, patterns=["oltp_point_select-c4", "oltp_point_select-c16"])
    write_record(tmp_path, case_record(done, timing=FULL_TIMING, host=this_host))
    write_record(
        tmp_path,
        case_record(busy, timing=FULL_TIMING, host=this_host, other_cpu=0.9),
    )
    code = make_mariadb_dataset.main(["--list", "--out", str(tmp_path), "--max-minutes", "36"])
    out = capsys.readouterr().out
    assert code == 0
    assert "done     oltp_point_select-c4" in out
    assert "busy     oltp_point_select-c16" in out and "0.90" in out
    assert "pending  read_io_read_only-c64" in out
    total = len(V2.cases())
    assert f"left to measure: {total - 1} cases" in out
    assert "run 1: " in out
    assert out.rstrip().endswith(f"--out {tmp_path} --max-minutes 36")


def test_a_run_refuses_stored_cases_of_another_machine_before_starting_anything(
    tmp_path: Path, this_host: dict[str, object], caplog: pytest.LogCaptureFixture
) -> None:
    quick = select_cases(V2, quick=True)
    other = this_host | {"cpu_model": "Intel Xeon Gold 6248"}
    write_record(tmp_path, case_record(quick[0], timing=QUICK_TIMING, host=other))
    code = make_mariadb_dataset.main(["--quick", "--out", str(tmp_path)])
    assert code == 2
    assert "measured on another machine" in caplog.text
    assert "Intel Xeon Gold 6248" in caplog.text
    assert not (tmp_path / "MANIFEST.json").exists()
    assert sorted(p.name for p in (tmp_path / "cases").iterdir()) == [quick[0].workload_id]


def test_a_finished_catalog_is_assembled_without_measuring(
    tmp_path: Path, this_host: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    quick = select_cases(V2, quick=True)
    for case in quick:
        write_record(tmp_path, case_record(case, timing=QUICK_TIMING, host=this_host))
    code = make_mariadb_dataset.main(["--quick", "--out", str(tmp_path)])
    assert code == 0
    dataset = load_dataset(tmp_path)
    assert sorted(dataset.workloads["workload_id"]) == sorted(c.workload_id for c in quick)
    assert dataset.manifest["command"].endswith(f"--dataset v2 --quick --out {tmp_path}")
    assert "wrote" in capsys.readouterr().out


def test_settle_lengthens_each_visit_by_the_seconds_it_drops(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--settle 3`` on v4's paired 2-s visits (1 s dropped): 3 s dropped, 4-s visits, one
    sample kept of each as before; the catalog's own directory is refused."""
    paired = catalog("v4").timing
    settled = paired.settled(3)
    assert (settled.discard_samples, settled.dwell_s) == (3, 4.0)
    assert settled.dwell_s - settled.discard_samples == paired.dwell_s - paired.discard_samples
    assert paired.settled(0.5) == paired  # never shorter than the catalog's
    with pytest.raises(SystemExit):
        make_mariadb_dataset.main(["--dataset", "v4", "--settle", "3", "--list"])
    assert "--settle" in capsys.readouterr().err
    code = make_mariadb_dataset.main(
        ["--dataset", "v4", "--out", str(tmp_path), "--cases", "hot_rows-c16"]
        + ["--settle", "3", "--list"]
    )
    out = capsys.readouterr().out
    assert code == 0 and "pending  hot_rows-c16" in out
    # Twice the catalog's 2-s visits, plus the same setup: about twice its minutes.
    (case,) = select_cases(catalog("v4"), patterns=["hot_rows-c16"])
    assert settled.case_seconds(case) > 1.8 * paired.case_seconds(case)
