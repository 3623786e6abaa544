"""The lab's process helpers on real processes and sockets."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab.processes import (
    MissingBinaries,
    free_ports,
    require_binaries,
    stop_process,
    stop_process_group,
    wait_until_ready,
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie child of ours is gone for every purpose but its table entry.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ", 1)[1][0] != "Z"


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = free_ports(3)
    assert len(set(ports)) == 3
    for port in ports:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_stopping_a_process_group_stops_the_children_it_forked(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    parent = subprocess.Popen(
        ["sh", "-c", f"sleep 300 & echo $! > {pid_file}; wait"], start_new_session=True
    )
    deadline = time.monotonic() + 10
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline, "the child never started"
        time.sleep(0.05)
    child = int(pid_file.read_text())
    assert _alive(child)
    stop_process_group(parent, timeout_s=5)
    assert parent.poll() is not None
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_stop_process_kills_what_ignores_sigterm() -> None:
    stubborn = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('ready', flush=True)\ntime.sleep(300)",
        ],
        stdout=subprocess.PIPE,
    )
    assert stubborn.stdout is not None and stubborn.stdout.readline() == b"ready\n"
    started = time.monotonic()
    stop_process(stubborn, timeout_s=0.5)
    assert stubborn.returncode == -9
    assert time.monotonic() - started < 10


def test_waiting_fails_with_the_details_when_the_process_exits() -> None:
    process = subprocess.Popen(["sh", "-c", "exit 3"])

    with pytest.raises(RuntimeError, match=r"(?s)demo exited with 3:\nthe log tail"):
        wait_until_ready(
            refused, process=process, name="demo", timeout_s=10, details=lambda: "the log tail"
        )


def refused() -> None:
    raise OSError("connection refused")


def test_waiting_returns_once_the_probe_answers_and_times_out_otherwise() -> None:
    process = subprocess.Popen(["sleep", "30"])
    try:
        calls: list[int] = []

        def ready_on_third_call() -> None:
            calls.append(1)
            if len(calls) < 3:
                raise OSError("not yet")

        wait_until_ready(ready_on_third_call, process=process, name="demo", poll_s=0.01)
        assert len(calls) == 3
        with pytest.raises(RuntimeError, match="demo not ready after 0.2s"):
            wait_until_ready(refused, process=process, name="demo", timeout_s=0.2, poll_s=0.01)
    finally:
        stop_process(process)


def test_missing_binaries_are_named_with_the_hint(tmp_path: Path) -> None:
    present = tmp_path / "present"
    present.write_text("")
    with pytest.raises(MissingBinaries, match=r"missing .*/absent: install it"):
        require_binaries(str(present), str(tmp_path / "absent"), hint="install it")
    require_binaries(str(present), hint="install it")
