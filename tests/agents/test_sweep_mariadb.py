"""``pooltune-agent sweep`` against the suite's own MariaDB under sysbench load."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.console import EXIT_INTERRUPTED
from agents.sweep import cli as sweep_cli
from tests.fixtures.mariadb import MariaDBServer, SysbenchLoad

pytestmark = [pytest.mark.slow, pytest.mark.mariadb]

SIZE = "thread_pool_size"
ORIGINAL = 3  # not on the swept grid, so a missed restore cannot pass by chance


@pytest.fixture
def original_size(mariadb_server: MariaDBServer) -> Iterator[int]:
    before = mariadb_server.variable(SIZE)
    mariadb_server.sql(f"SET GLOBAL {SIZE} = {ORIGINAL}")
    try:
        yield ORIGINAL
    finally:
        mariadb_server.sql(f"SET GLOBAL {SIZE} = {before}")


def _config(server: MariaDBServer, tmp_path: Path) -> Path:
    path = tmp_path / "agent.toml"
    path.write_text(
        f'[agent]\nstate_dir = "{tmp_path / "state"}"\nsample_period_s = 1.0\n'
        f'[target]\nhost = "{server.host}"\nport = {server.port}\nuser = "{server.user}"\n'
        f'password = "{server.password}"\n'
    )
    return path


def _sweep_args(config: Path, out: Path, *, values: str, dwell: str, repeats: str) -> list[str]:
    return [
        "sweep",
        "--config",
        str(config),
        "--values",
        values,
        "--dwell",
        dwell,
        "--repeats",
        repeats,
        "--discard",
        "1",
        "--out",
        str(out),
        "--yes",
    ]


def test_sweep_measures_the_curve_and_restores_the_size(
    mariadb_server: MariaDBServer,
    sysbench: SysbenchLoad,
    original_size: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sysbench.start("oltp_read_only", threads=8, time_s=60)
    time.sleep(1.0)
    config = _config(mariadb_server, tmp_path)
    out = tmp_path / "curve.csv"
    code = sweep_cli.main(_sweep_args(config, out, values="1,2,8", dwell="2", repeats="2"))
    assert code == 0, capsys.readouterr().err
    assert mariadb_server.variable(SIZE) == original_size
    assert not (tmp_path / "state" / "original-tuple.json").exists()
    rows = list(csv.DictReader(out.open()))
    assert [int(r["value"]) for r in rows] == [1, 2, 8]
    for row in rows:
        assert int(row["samples"]) == 2  # 2 visits × (2 samples − 1 dropped)
        assert float(row["throughput_mean"]) > 0
    samples = list(csv.DictReader(out.with_name("curve-samples.csv").open()))
    assert len(samples) == 3 * 2 * 2
    # The pool's stall counter is read on every sample (read-only selects never stall it).
    assert {r["stalled"] for r in samples} == {"0"}
    assert all(float(r["lock_waits"]) == 0.0 for r in samples)
    assert all(float(r["stall_wakes_per_s"]) >= 0.0 for r in samples)
    profile = json.loads(out.with_name("curve-profile.json").read_text())
    assert profile["profile_over_sweep"]["connections"] >= 8
    assert "thread_pool_size" in capsys.readouterr().out


def _start_sweep(config: Path, out: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agents.sweep.cli",
            *_sweep_args(config, out, values="1,8", dwell="30", repeats="1"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _wait_for_change(server: MariaDBServer, state_file: Path, original: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if state_file.exists() and server.variable(SIZE) != original:
            return
        time.sleep(0.1)
    raise AssertionError("the sweep did not change the size within 20 s")


def test_sigterm_stops_the_sweep_and_restores(
    mariadb_server: MariaDBServer, sysbench: SysbenchLoad, original_size: int, tmp_path: Path
) -> None:
    sysbench.start("oltp_read_only", threads=4, time_s=60)
    config = _config(mariadb_server, tmp_path)
    state_file = tmp_path / "state" / "original-tuple.json"
    process = _start_sweep(config, tmp_path / "curve.csv")
    try:
        _wait_for_change(mariadb_server, state_file, original_size)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == EXIT_INTERRUPTED, stderr.decode()
    assert b"restored" in stderr
    assert mariadb_server.variable(SIZE) == original_size
    assert not state_file.exists()


def test_kill_9_is_undone_by_pooltune_agent_restore(
    mariadb_server: MariaDBServer, original_size: int, tmp_path: Path
) -> None:
    config = _config(mariadb_server, tmp_path)
    state_file = tmp_path / "state" / "original-tuple.json"
    process = _start_sweep(config, tmp_path / "curve.csv")
    try:
        _wait_for_change(mariadb_server, state_file, original_size)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
    assert mariadb_server.variable(SIZE) != original_size  # left changed by the kill
    restore = subprocess.run(
        [sys.executable, "-m", "agents.cli", "restore", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert restore.returncode == 0, restore.stderr
    assert mariadb_server.variable(SIZE) == original_size
    assert not state_file.exists()
