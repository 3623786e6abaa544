"""A live PgBouncer case places PostgreSQL's checkpoints on each run's series, so that a
fall at a fixed pool size can be told from the agent's doing."""

from __future__ import annotations

import time
from typing import Any

import pytest

from benchmarks.pgbouncer.checkpoints import (
    CHECKPOINT_SETTINGS,
    Checkpoint,
    checkpoint_line,
    on_series,
    read_checkpoints,
    record_checkpoints,
)
from lab.postgres import start_postgres, stop_postgres


@pytest.mark.pgbouncer
def test_a_checkpoint_of_a_lab_cluster_is_read_from_its_log() -> None:
    """A real cluster started with the live case's settings logs a forced checkpoint with
    its begin and end time, which the reader finds between the times around it."""
    cluster = start_postgres(prefix="pooltune-test-checkpoints-", settings=CHECKPOINT_SETTINGS)
    try:
        before = read_checkpoints(cluster.log_file.read_text(errors="replace"))
        asked = time.time()
        cluster.sql("CREATE TABLE t AS SELECT generate_series(1, 20000) AS n")
        cluster.sql("CHECKPOINT")
        done = time.time()
        after = read_checkpoints(cluster.log_file.read_text(errors="replace"))
    finally:
        stop_postgres(cluster)
    assert len(after) == len(before) + 1
    checkpoint = after[-1]
    assert "immediate" in checkpoint.reason
    assert checkpoint.ended is not None and checkpoint.buffers is not None
    assert asked - 1 <= checkpoint.began <= checkpoint.ended <= done + 1
    assert checkpoint.buffers > 0


def test_checkpoints_are_placed_in_seconds_from_the_series_start() -> None:
    """Samples end every 2 s from t0 + 2; a checkpoint over 20–50 s of the run is printed
    there, one before the run is left out, one unfinished runs to the series' end."""
    t0 = 1_000_000.0
    times = [t0 + 2.0 * (i + 1) for i in range(60)]
    checkpoints = [
        Checkpoint(t0 - 100, t0 - 70, "time", 10),
        Checkpoint(t0 + 20, t0 + 50, "time", 1234),
        Checkpoint(t0 + 110, None, "wal"),
    ]
    assert on_series(checkpoints, times) == [
        "20–50 s (time, 1234 buffers)",
        "110–120 s (wal)",
    ]
    assert on_series(checkpoints, []) == []
    series = [100.0] * 60
    series[30:35] = [40.0] * 5  # the worst 10 s: samples 30–34, 60–70 s
    line = checkpoint_line(checkpoints, series, times)
    assert line.startswith("worst 10 s at 60–70 s; checkpoints 20–50 s")


def test_a_log_without_timestamps_or_checkpoints_yields_none() -> None:
    log = (
        "2026-12-06 14:00:00.000 UTC [12] LOG:  checkpoint starting: time\n"
        "LOG:  database system is ready"
    )
    assert read_checkpoints(log) == []
    unfinished = read_checkpoints("1765029901.250 LOG:  checkpoint starting: wal\n")
    assert unfinished == [Checkpoint(1765029901.25, None, "wal")]


def test_every_run_of_the_case_records_the_checkpoints(capsys: pytest.CaptureFixture[str]) -> None:
    t0 = 1_000_000.0
    times = [t0 + 2.0 * (i + 1) for i in range(10)]
    run = {"agent": [1.0] * 10, "agent_times": times}
    raw: dict[str, Any] = {
        "tpcb_likex12": {"control": [1.0] * 10, "control_times": times} | run,
        "tpcb_likex12-warm": dict(run),
        "tpcb_likex128": dict(run),
    }
    record_checkpoints(raw, "tpcb_likex12", [Checkpoint(t0 + 4, t0 + 8, "time", 5)], "tpcb x12")
    assert raw["tpcb_likex12"]["checkpoints"] == [[t0 + 4, t0 + 8, "time", 5]]
    assert "checkpoints" in raw["tpcb_likex12-warm"]
    assert "checkpoints" not in raw["tpcb_likex128"]
    printed = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in printed] == [
        "# tpcb x12 control",
        "# tpcb x12 agent cold",
        "# tpcb x12 agent warm",
    ]
