"""Pauses of the machine itself, to tell them from a service's own stalls.

A helper process at the highest priority it may take (``nice -20`` as root) sleeps 1 ms at
a time and reports every wake-up later than a threshold: when even it could not run, the
virtual CPUs were paused (the host took them: the ``steal`` of ``/proc/stat``) or something
held every core. :class:`PauseMeter` runs it beside a benchmark; its clock is
``time.monotonic`` (one clock for every process on Linux), the clock of asyncio's loop, so
a pause can be set against the requests answered late around it (docs/service.md).

:class:`LoopStalls` does the same for the service's own workers: it reads their log and
keeps each "event loop blocked" warning (service/loop_lag.py) as a pause of that worker's
loop, so a burst of late answers can be told to be the loop held by a callback, or not.

``python -m benchmarks.pauses --threshold-ms 20`` runs the helper alone: one line per pause,
``<monotonic end s> <length s>``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO

from service.loop_lag import BLOCKED

#: The helper's first line: it is watching.
READY = "ready"


@dataclass(frozen=True, slots=True)
class Pause:
    """A wake-up ``length_s`` after the previous one, which ended at ``end_s`` (of a
    service's loop: ``gc_s`` of it in its garbage collector)."""

    end_s: float
    length_s: float
    gc_s: float = 0.0

    @property
    def start_s(self) -> float:
        return self.end_s - self.length_s


class PauseMeter:
    """Runs the helper process and collects its pauses (a thread reads its output)."""

    def __init__(self, threshold_ms: float = 20.0) -> None:
        self.threshold_ms = threshold_ms
        self.pauses: list[Pause] = []
        self._process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None

    def start(self) -> PauseMeter:
        """Start the helper; returns once it is watching (its first line says so), so no
        pause after this call goes unseen."""
        command = [sys.executable, "-m", "benchmarks.pauses"]
        command += ["--threshold-ms", str(self.threshold_ms)]
        self._process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert self._process.stdout is not None
        if self._process.stdout.readline().strip() != READY:
            raise RuntimeError("the pause helper did not start")
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        return self

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            fields = line.split()
            if len(fields) == 2:
                self.pauses.append(Pause(float(fields[0]), float(fields[1])))

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=10)
        if self._reader is not None:
            self._reader.join(timeout=10)

    def between(self, start_s: float, end_s: float) -> list[Pause]:
        """The pauses that overlap [start_s, end_s]."""
        return within(self.pauses, start_s, end_s)


class LoopStalls:
    """Reads a service's log (its stderr, a text pipe) in a thread: every "event loop
    blocked" line is kept as a :class:`Pause`, every other line passed on to ``echo``."""

    def __init__(self, stream: IO[str], echo: IO[str]) -> None:
        self.stalls: list[Pause] = []
        self._stream, self._echo = stream, echo
        self._reader = threading.Thread(target=self._read, daemon=True)

    def start(self) -> LoopStalls:
        self._reader.start()
        return self

    def _read(self) -> None:
        for line in self._stream:
            stall = _loop_stall(line)
            if stall is None:
                self._echo.write(line)
                self._echo.flush()
            else:
                self.stalls.append(stall)

    def between(self, start_s: float, end_s: float) -> list[Pause]:
        """The stalls that overlap [start_s, end_s]."""
        return within(self.stalls, start_s, end_s)


@dataclass(frozen=True)
class Watchers:
    """The machine's pauses and the service loops' stalls, watched together."""

    machine: PauseMeter
    loops: LoopStalls

    def describe(
        self, late: Sequence[tuple[float, float]], start_s: float, end_s: float, late_after_s: float
    ) -> str:
        """:func:`describe` over the phase [start_s, end_s]."""
        return describe(
            late,
            self.machine.between(start_s, end_s),
            late_after_s=late_after_s,
            stalls=self.loops.between(start_s, end_s),
        )


def _loop_stall(line: str) -> Pause | None:
    """The stall a service log line reports, or None for any other line."""
    if BLOCKED not in line:
        return None
    try:
        entry = json.loads(line)
        gc_s = float(entry.get("gc_ms", 0.0)) / 1000.0
        return Pause(float(entry["monotonic_s"]), float(entry["lag_ms"]) / 1000.0, gc_s)
    except (ValueError, KeyError, TypeError):
        return None


def within(pauses: Sequence[Pause], start_s: float, end_s: float) -> list[Pause]:
    """The ``pauses`` that overlap [start_s, end_s] (a copy: a reader thread may append)."""
    return [p for p in list(pauses) if p.end_s >= start_s and p.start_s <= end_s]


def overlapping(windows: Sequence[tuple[float, float]], pauses: Sequence[Pause]) -> int:
    """How many of the (start, end) ``windows`` contain part of a pause."""
    return sum(any(p.end_s >= a and p.start_s <= b for p in pauses) for a, b in windows)


def bursts(windows: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The (start, end) ``windows`` merged where they overlap: requests late together."""
    merged: list[tuple[float, float]] = []
    for start, end in sorted(windows):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def describe(
    late: Sequence[tuple[float, float]],
    pauses: Sequence[Pause],
    *,
    late_after_s: float,
    stalls: Sequence[Pause] = (),
) -> str:
    """Two lines: the requests answered more than ``late_after_s`` late (``(arrival,
    answer)`` windows) in bursts; the machine's pauses and the service loops' stalls over
    the same phase, and how many bursts had one inside."""
    groups = bursts(late)
    return (
        f"  answered over {late_after_s * 1000:.0f} ms late: {len(late)} in {len(groups)} "
        f"bursts\n  {_pauses_line('machine pauses', pauses, groups)}; "
        f"{_pauses_line('service loop held', stalls, groups)}"
    )


def _pauses_line(name: str, pauses: Sequence[Pause], groups: Sequence[tuple[float, float]]) -> str:
    longest = max((p.length_s for p in pauses), default=0.0)
    collector = sum(p.gc_s for p in pauses)
    return (
        f"{name}: {len(pauses)} (longest {longest * 1000:.0f} ms, "
        f"{sum(p.length_s for p in pauses) * 1000:.0f} ms in all"
        + (f", {collector * 1000:.0f} ms of it garbage collection" if collector else "")
        + "), in "
        f"{overlapping(groups, pauses)} of {len(groups)} bursts"
    )


def _watch(threshold_s: float) -> None:
    try:
        os.nice(-20)
    except OSError:
        pass  # not root: the highest priority this user may take is the default
    print(READY, flush=True)
    last = time.monotonic()
    while True:
        time.sleep(0.001)
        now = time.monotonic()
        if now - last > threshold_s:
            print(f"{now:.6f} {now - last:.6f}", flush=True)
        last = now


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Report every wake-up of a 1-ms sleeper at the highest priority that "
        "comes later than the threshold: pauses of the machine itself."
    )
    parser.add_argument("--threshold-ms", type=float, default=20.0)
    args = parser.parse_args(argv)
    try:
        _watch(args.threshold_ms / 1000.0)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
