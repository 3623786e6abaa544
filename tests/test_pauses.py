"""The pause watchers of the service benchmark: a stopped helper is a pause of the machine,
a service's "event loop blocked" line a stall of its loop."""

from __future__ import annotations

import io
import json
import os
import signal
import time

from benchmarks.pauses import LoopStalls, Pause, PauseMeter, bursts, describe, overlapping
from service.loop_lag import BLOCKED


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
    stalls = [Pause(end_s=5.05, length_s=0.03), Pause(end_s=9.0, length_s=0.2, gc_s=0.15)]
    text = describe(late, pauses, late_after_s=0.05, stalls=stalls)
    assert "over 50 ms late: 3 in 2 bursts" in text
    assert "machine pauses: 1 (longest 100 ms, 100 ms in all), in 1 of 2 bursts" in text
    held = "service loop held: 2 (longest 200 ms, 230 ms in all, 150 ms of it garbage collection)"
    assert f"{held}, in 1 of 2 bursts" in text


def test_the_service_log_gives_loop_stalls_and_passes_other_lines_on() -> None:
    blocked = {"message": BLOCKED, "lag_ms": 120.0, "monotonic_s": 7.5, "gc_ms": 80.0}
    log = io.StringIO(
        json.dumps(blocked)
        + "\n"
        + json.dumps({"level": "ERROR", "message": "database unavailable"})
        + "\n"
        + json.dumps({"message": BLOCKED, "lag_ms": "not a number"})
        + "\n"
    )
    echo = io.StringIO()
    watch = LoopStalls(log, echo).start()
    watch._reader.join(timeout=5)
    assert watch.stalls == [Pause(end_s=7.5, length_s=0.12, gc_s=0.08)]
    assert watch.between(7.0, 7.4) == watch.stalls and not watch.between(7.6, 9.0)
    # Anything that is not a well-formed stall is shown, never dropped.
    assert "database unavailable" in echo.getvalue() and "not a number" in echo.getvalue()
