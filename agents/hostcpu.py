"""What /proc says about this host: busy CPU time, a process's CPU time, total memory.

One reader per fact, used by the MariaDB target, the sweep, the lab harness and the
benchmarks, so every figure of "CPU used" in the project is computed the same way.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

PROC = Path("/proc")


def _clock_ticks() -> int:
    return os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def host_busy_seconds(proc_root: Path = PROC) -> float | None:
    """Busy CPU seconds of the whole host since boot (all but idle and iowait), or None."""
    try:
        with (proc_root / "stat").open() as stream:
            first = stream.readline()
    except OSError:
        return None
    fields = first.split()
    if not fields or fields[0] != "cpu":
        return None
    try:
        numbers = [int(v) for v in fields[1:]]
    except ValueError:
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice: inside user]
    busy = sum(numbers[:8]) - numbers[3] - (numbers[4] if len(numbers) > 4 else 0)
    return busy / _clock_ticks()


class HostCpu:
    """Busy CPU seconds of the whole host, read from ``proc_root``/stat."""

    def __init__(self, proc_root: Path = PROC) -> None:
        self._proc_root = proc_root

    def busy_seconds(self) -> float | None:
        return host_busy_seconds(self._proc_root)


def stat_fields(pid: int, proc_root: Path = PROC) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first, then the
    parent's pid); None when the process is gone."""
    try:
        stat = (proc_root / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may contain spaces: split after the last ')'.
    return stat[stat.rfind(")") + 2 :].split()


def process_cpu_seconds(pid: int, proc_root: Path = PROC) -> float | None:
    """User + system CPU seconds of process ``pid`` (all its threads), from /proc."""
    fields = stat_fields(pid, proc_root)
    if fields is None:
        return None
    try:
        utime, stime = int(fields[11]), int(fields[12])
    except (IndexError, ValueError):
        return None
    return (utime + stime) / _clock_ticks()


def process_tree_cpu_seconds(pid: int, proc_root: Path = PROC) -> float | None:
    """CPU seconds of ``pid``, of its children that have exited (cutime + cstime) and of its
    live children: a counter that keeps growing while children come and go, as PostgreSQL's
    backends (one process per connection, forked by the postmaster ``pid``) do."""
    fields = stat_fields(pid, proc_root)
    if fields is None:
        return None
    try:
        total = sum(int(value) for value in fields[11:15])
    except (IndexError, ValueError):
        return None
    parent = str(pid)
    for entry in proc_root.iterdir():
        if not entry.name.isdigit() or entry.name == parent:
            continue
        child = stat_fields(int(entry.name), proc_root)
        if child is None or len(child) < 15 or child[1] != parent:
            continue
        try:
            total += sum(int(value) for value in child[11:15])
        except ValueError:
            continue
    return total / _clock_ticks()


def processes_cpu_seconds(pids: Sequence[int], proc_root: Path = PROC) -> float | None:
    """Summed CPU seconds of ``pids``; None when there are none or one cannot be read."""
    if not pids:
        return None
    total = 0.0
    for pid in pids:
        seconds = process_cpu_seconds(pid, proc_root)
        if seconds is None:
            return None
        total += seconds
    return total


def memory_total_bytes(proc_root: Path = PROC) -> int | None:
    """The host's MemTotal in bytes, or None when /proc/meminfo cannot be read."""
    try:
        for line in (proc_root / "meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
