"""``scripts.compare_cases``: one case measured twice, read side by side."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts import compare_cases
from scripts.mariadb_dataset.cases import SIZE
from scripts.mariadb_dataset.catalogs import catalog
from scripts.mariadb_dataset.records import CASES_DIR, RECORD_FILE, write_record
from tests.scripts.factories import HOST, case_record, sweep

CASE = next(c for c in catalog("v2").cases() if c.workload_id == "oltp_read_only-c64")


def _store(out: Path, curve: dict[int, float], cpu_model: str) -> Path:
    record = case_record(CASE, host={**HOST, "cpu_model": cpu_model})
    record.sweeps[SIZE] = sweep(SIZE, curve, repeats=4, connections=CASE.clients)
    write_record(out, record)
    return out / CASES_DIR


def test_two_machines_with_different_optima_are_told_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _store(tmp_path / "a", {1: 700.0, 2: 1000.0, 4: 1500.0, 8: 1000.0}, "AMD EPYC")
    b = _store(tmp_path / "b", {1: 700.0, 2: 1000.0, 4: 1000.0, 8: 2000.0}, "Intel Xeon")
    first = compare_cases.reading(a / CASE.workload_id / RECORD_FILE)
    second = compare_cases.reading(b / CASE.workload_id / RECORD_FILE)
    assert (first.best, second.best) == (4, 8)
    assert first.ratios[2] == 1.0
    assert first.ratios[4] == pytest.approx(1.5, rel=0.06)
    # Each best costs about half of the other's on the other machine; the noise is ±5%.
    assert second.regret_of(4) == pytest.approx(0.5, abs=0.05)
    assert first.regret_of(8) == pytest.approx(1 / 3, abs=0.05)
    assert 0 < first.noise < 0.05
    assert compare_cases.main([str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert CASE.workload_id in out and "(AMD EPYC)" in out and "(Intel Xeon)" in out


def test_a_case_missing_on_one_side_is_an_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _store(tmp_path / "a", {1: 700.0, 2: 1000.0, 4: 1500.0, 8: 1000.0}, "AMD EPYC")
    (tmp_path / "b").mkdir()
    assert compare_cases.main([str(a), str(tmp_path / "b"), CASE.workload_id]) == 2
    assert CASE.workload_id in capsys.readouterr().err
    with pytest.raises(SystemExit):
        compare_cases.main([str(a), str(tmp_path / "b")])
