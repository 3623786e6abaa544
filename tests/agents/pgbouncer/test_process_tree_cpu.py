"""PostgreSQL's CPU time: the postmaster, its reaped children and its live ones."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agents.hostcpu import process_tree_cpu_seconds

TICKS = os.sysconf("SC_CLK_TCK")


def fake_process(proc: Path, pid: int, *, ppid: int, ticks: tuple[int, int, int, int]) -> None:
    (proc / str(pid)).mkdir()
    utime, stime, cutime, cstime = ticks
    fields = ["S", str(ppid), *["0"] * 9, str(utime), str(stime), str(cutime), str(cstime), "20"]
    (proc / str(pid) / "stat").write_text(f"{pid} (postgres: a b) {' '.join(fields)}\n")


def test_children_alive_and_reaped_are_counted(tmp_path: Path) -> None:
    fake_process(tmp_path, 100, ppid=1, ticks=(10, 5, 200, 100))  # 300 reaped
    fake_process(tmp_path, 101, ppid=100, ticks=(40, 10, 0, 0))
    fake_process(tmp_path, 102, ppid=100, ticks=(30, 20, 0, 0))
    fake_process(tmp_path, 103, ppid=1, ticks=(999, 999, 0, 0))  # not a child
    (tmp_path / "self").mkdir()
    assert process_tree_cpu_seconds(100, tmp_path) == pytest.approx(415 / TICKS)


def test_a_missing_process_has_no_cpu_time(tmp_path: Path) -> None:
    assert process_tree_cpu_seconds(42, tmp_path) is None


def test_a_real_process_reads_its_own_time() -> None:
    own = process_tree_cpu_seconds(os.getpid())
    assert own is not None and own > 0
