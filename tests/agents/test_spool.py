"""The on-disk spool: atomic, versioned, capped with the oldest dropped and counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.spool import SPOOL_FORMAT, Spool, SpoolError
from tests.agents.reports import make_report


def test_reports_come_back_oldest_first_in_a_versioned_envelope(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    first, second = make_report(), make_report()
    spool.put(first)
    spool.put(second)
    pending = list(spool.pending())
    assert [item.report.idempotency_key for item in pending] == [
        first.idempotency_key,
        second.idempotency_key,
    ]
    assert pending[0].report == first
    envelope = json.loads(pending[0].path.read_text())
    assert envelope["spool_format"] == SPOOL_FORMAT
    assert envelope["kind"] == "climb_report"
    assert envelope["idempotency_key"] == first.idempotency_key
    assert envelope["attempts"] == 0
    # Written atomically: no temporary files are left behind.
    assert all(not p.name.startswith(".") for p in spool.directory.iterdir())


def test_the_same_report_is_spooled_once(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    report = make_report()
    assert spool.put(report) == spool.put(report)
    assert len(spool) == 1


def test_size_cap_drops_the_oldest_and_counts_them(tmp_path: Path) -> None:
    one = len(Spool(tmp_path / "probe")._envelope(make_report(trace_samples=20), 0).encode())
    spool = Spool(tmp_path / "spool", max_bytes=int(one * 3.5))
    reports = [make_report(trace_samples=20) for _ in range(5)]
    for report in reports:
        spool.put(report)
    kept = [item.report.idempotency_key for item in spool.pending()]
    assert kept == [r.idempotency_key for r in reports[2:]]
    assert spool.dropped == 2
    assert spool.size_bytes() <= spool.max_bytes
    # The counter survives a new Spool object (it is on disk).
    assert Spool(tmp_path / "spool").dropped == 2


def test_a_report_larger_than_the_cap_is_refused_and_counted(tmp_path: Path) -> None:
    spool = Spool(tmp_path, max_bytes=200)
    with pytest.raises(SpoolError, match="larger than"):
        spool.put(make_report())
    assert spool.dropped == 1
    assert len(spool) == 0


def test_unknown_format_and_damaged_files_move_to_rejected(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    good = make_report()
    spool.put(good)
    (tmp_path / "00000000000000000001-future.json").write_text(
        json.dumps({"spool_format": 99, "kind": "climb_report", "payload": {}})
    )
    (tmp_path / "00000000000000000002-broken.json").write_text("{")
    pending = list(spool.pending())
    assert [item.report.idempotency_key for item in pending] == [good.idempotency_key]
    assert sorted(p.name for p in spool.rejected_dir.iterdir()) == [
        "00000000000000000001-future.json",
        "00000000000000000002-broken.json",
    ]


def test_record_attempt_and_remove(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    spool.put(make_report())
    (item,) = spool.pending()
    spool.record_attempt(item)
    (again,) = spool.pending()
    assert again.attempts == 1
    spool.remove(again)
    assert len(spool) == 0
