"""The agent with a state directory that is read-only or full, on the suite's real MariaDB
(docs/agent.md, "Faults").

The state directory is a small tmpfs the test mounts (root only; where mounting is refused
the test is skipped, and test_agent_faults.py covers the same rules with ENOSPC simulated at
the write call). Before the first change the agent must refuse every change, say so in its
log and its status (written to the runtime directory meanwhile) and keep sampling; once the
directory takes the original tuple again it climbs; a fault in the middle of a climb (the
original already on disk) does not stop it, and a stop still puts the original back.
"""

from __future__ import annotations

import errno
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.config import load_config
from agents.state import StatusFile
from tests.agents.agent_process import AgentProcess, agent_env, write_config
from tests.fixtures.mariadb import MariaDBServer, SysbenchLoad

pytestmark = [pytest.mark.slow, pytest.mark.mariadb]

SIZE = "thread_pool_size"
ORIGINAL = 9  # outside the bounds below: any change of the agent shows


class StateDisk:
    """A 256 KiB tmpfs as the agent's state directory; it can turn read-only or full."""

    def __init__(self, mount_point: Path) -> None:
        self.mount_point = mount_point
        self.ballast = mount_point / "ballast"

    def _mount(self, *options: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["mount", *options, str(self.mount_point)], capture_output=True, text=True
        )

    def read_only(self) -> None:
        # A remount waits for files open for writing (the agent's atomic writes are brief).
        for _ in range(50):
            if self._mount("-o", "remount,ro").returncode == 0:
                return
            time.sleep(0.05)
        raise AssertionError("cannot remount the state directory read-only")

    def writable(self) -> None:
        result = self._mount("-o", "remount,rw")
        assert result.returncode == 0, result.stderr

    def full(self) -> None:
        with self.ballast.open("ab", buffering=0) as handle:
            try:
                while True:
                    handle.write(b"\0" * 4096)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc

    def room(self) -> None:
        self.ballast.unlink()


@pytest.fixture
def state_disk(tmp_path: Path) -> Iterator[StateDisk]:
    mount_point = tmp_path / "state"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "pooltune-state", str(mount_point)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()})")
    try:
        yield StateDisk(mount_point)
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


@pytest.fixture(autouse=True)
def _reset_pool_size(mariadb_server: MariaDBServer) -> object:
    yield None
    mariadb_server.sql(f"SET GLOBAL {SIZE} = 2")


FAULTS: dict[str, tuple[str, str, str]] = {
    # fault name: (break it, repair it, what the agent reports)
    "read-only": ("read_only", "writable", "Read-only file system"),
    "full": ("full", "room", "No space left on device"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_state_dir_fault_blocks_every_change_and_status_keeps_coming(
    fault: str,
    mariadb_server: MariaDBServer,
    sysbench: SysbenchLoad,
    state_disk: StateDisk,
    tmp_path: Path,
) -> None:
    break_it: Callable[[], None] = getattr(state_disk, FAULTS[fault][0])
    repair: Callable[[], None] = getattr(state_disk, FAULTS[fault][1])
    reason = FAULTS[fault][2]
    mariadb_server.sql(f"SET GLOBAL {SIZE} = {ORIGINAL}")
    sysbench.start("oltp_read_only", threads=4, time_s=120)
    config_path = write_config(tmp_path, mariadb_server, bounds={SIZE: (1, 6)}, climb_max_s=60)
    config_path.write_text(
        config_path.read_text().replace(
            "[agent]\n", f'[agent]\nruntime_dir = "{tmp_path / "run"}"\n'
        )
    )
    config = load_config(config_path, env={"POOLTUNE_DB_PASSWORD": "x"})
    status_file = StatusFile(config.status_file, fallback=config.status_fallback_file)

    def status() -> dict[str, Any]:
        try:
            return status_file.read() or {}
        except Exception:  # a file being replaced
            return {}

    break_it()
    agent = AgentProcess(config_path, agent_env(mariadb_server), tmp_path / "agent.log")
    seen: list[int] = []
    watching = threading.Event()
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            if watching.is_set():
                seen.append(mariadb_server.variable(SIZE))
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        watching.set()
        agent.wait_for(lambda: status().get("phase") == "blocked", timeout=25, what="blocked")
        blocked = status()
        assert reason in blocked["state_error"]
        assert "cannot write" in blocked["status_file_error"]
        assert config.status_fallback_file.exists()
        log = agent.log()
        assert f"cannot save the original tuple to {config.state_file} ({reason})" in log
        # Still sampling and still writing its status, changing nothing.
        samples = blocked["counters"]["samples"]
        agent.wait_for(
            lambda: status().get("counters", {}).get("samples", 0) >= samples + 4,
            timeout=10,
            what="more samples while blocked",
        )
        assert status()["phase"] == "blocked"
        watching.clear()
        assert seen and set(seen) == {ORIGINAL}, sorted(set(seen))
        assert not config.state_file.exists()
        assert "applied {" not in agent.log()

        # The directory takes the original again: saved, profiled, climbing.
        repair()
        agent.wait_for(
            lambda: status().get("phase") == "climbing" and "applied {" in agent.log(),
            timeout=25,
            what="a climb once the original can be saved",
        )
        assert mariadb_server.variable(SIZE) != ORIGINAL
        assert status()["state_error"] is None
        assert not config.status_fallback_file.exists()

        # The same fault mid-climb: the original is on disk, so the climb goes on.
        break_it()
        changes = agent.log().count("applied {")
        agent.wait_for(
            lambda: agent.log().count("applied {") > changes or "converged at" in agent.log(),
            timeout=20,
            what="the climb to go on",
        )
        assert status()["phase"] in ("climbing", "holding")
    finally:
        done.set()
        watcher.join(timeout=5)
        code = agent.terminate()
    assert code == 0, agent.log()[-3000:]
    assert mariadb_server.variable(SIZE) == ORIGINAL
    log = agent.log()
    assert "original tuple {'thread_pool_size': 9} restored" in log
    if fault == "read-only":
        # The file cannot be removed: it holds what is in force, and the log says so.
        assert "cannot be removed" in log
    else:
        assert not config.state_file.exists()
