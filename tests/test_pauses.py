"""The machine-pause meter of the service benchmark: a stopped helper is a pause."""

from __future__ import annotations

import os
import signal
import time

from benchmarks.pauses import Pause, PauseMeter, bursts, describe, overlapping


def test_a_helper_kept_from_running_reports_a_pause_at_that_time() -> None:
    meter = PauseMeter(threshold_ms=50.0).start()
    try:
        time.sleep(0.1)  # start() returned: the helper is sleeping 1 ms at a time
        assert meter.pid is not None
        stopped = time.monotonic()
        os.kill(meter.pid, signal.SIGSTOP)
        time.sleep(0.2)
        os.kill(meter.pid, signal.SIGCONT)
        resumed = time.monotonic()
        time.sleep(0.3)
    finally:
        meter.stop()
    long = [p for p in meter.pauses if p.length_s >= 0.15]
    assert long, meter.pauses
    assert meter.between(stopped, resumed) and long[0].start_s <= resumed
    assert long[0].end_s >= stopped
    assert not meter.between(resumed + 10.0, resumed + 20.0)


def test_late_requests_are_grouped_and_set_against_pauses() -> None:
    late = [(1.0, 1.2), (1.1, 1.3), (5.0, 5.1)]
    assert bursts(late) == [(1.0, 1.3), (5.0, 5.1)]
    pauses = [Pause(end_s=1.25, length_s=0.1)]
    assert overlapping(bursts(late), pauses) == 1
    line = describe(late, pauses, late_after_s=0.05)
    assert "over 50 ms late: 3 in 2 bursts" in line and "pause inside: 1 of 2" in line
    assert "longest 100 ms" in line
