"""The real ``pooltune-agent`` against the suite's own MariaDB under sysbench load.

Short windows (0.5 s samples, 2 s profiles) keep each scenario within ~20 s.
"""

from __future__ import annotations

import json
import re
import signal
import threading
import time
from pathlib import Path

import pytest

from tests.agents.agent_process import AgentProcess, agent_env, run_cli, write_config
from tests.fixtures.mariadb import MariaDBServer, SysbenchLoad

pytestmark = [pytest.mark.slow, pytest.mark.mariadb]

SIZE = "thread_pool_size"


@pytest.fixture
def loaded_server(mariadb_server: MariaDBServer, sysbench: SysbenchLoad) -> MariaDBServer:
    """The server under a light read-only load; thread_pool_size restored afterwards."""
    sysbench.start("oltp_read_only", threads=4, time_s=120)
    return mariadb_server


@pytest.fixture(autouse=True)
def _reset_pool_size(mariadb_server: MariaDBServer) -> object:
    yield None
    mariadb_server.sql(f"SET GLOBAL {SIZE} = 2")


def _applied_values(log: str) -> list[int]:
    return [int(v) for v in re.findall(r"applied \{'thread_pool_size': (\d+)\}", log)]


def _state_file(config: Path) -> Path:
    return config.parent / "state" / "original-tuple.json"


def test_bounded_climb_applies_only_values_inside_bounds(
    loaded_server: MariaDBServer, tmp_path: Path
) -> None:
    loaded_server.sql(f"SET GLOBAL {SIZE} = 9")  # outside the bounds: must be clipped
    config = write_config(tmp_path, loaded_server, bounds={SIZE: (2, 5)}, climb_max_s=12)
    seen: list[int] = []
    watching = threading.Event()
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            if watching.is_set():
                seen.append(loaded_server.variable(SIZE))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    agent = AgentProcess(config, agent_env(loaded_server), tmp_path / "agent.log")
    started = time.monotonic()
    try:
        agent.wait_for(_state_file(config).exists, timeout=20, what="the first knob change")
        time.sleep(0.3)
        watching.set()
        agent.wait_for(
            lambda: (agent.status() or {}).get("last_report") is not None,
            timeout=40,
            what="the climb to end with a report",
        )
        elapsed = time.monotonic() - started
        status = agent.status()
        assert status is not None and status["phase"] == "holding"
        collectors = status["collectors"]
        assert collectors["global_status"]["successes"] > 10
        assert collectors["thread_pool_groups"]["failures"] == 0
    finally:
        # Stop watching before the agent restores the out-of-bounds original.
        done.set()
        watcher.join(timeout=5)
        code = agent.terminate()
    assert code == 0
    # The climb is bounded: profile (2 s) + climb_max_s (12 s) + start-up, with slack.
    assert elapsed < 35
    applied = _applied_values(agent.log())
    assert applied, agent.log()
    assert all(2 <= value <= 5 for value in applied), applied
    assert seen and all(2 <= value <= 5 for value in seen), sorted(set(seen))
    # The report (spooled: no service configured) carries a trace inside the bounds too.
    (spooled,) = sorted((tmp_path / "state" / "spool").glob("*.json"))
    payload = json.loads(spooled.read_text())["payload"]
    assert all(2 <= s["knobs"][SIZE] <= 5 for s in payload["trace"])
    assert 2 <= payload["optimal_tuple"]["values"][SIZE] <= 5
    assert payload["start_source"] == "local-heuristic"
    # SIGTERM put the original value back, even though it is outside the bounds.
    assert loaded_server.variable(SIZE) == 9
    assert not _state_file(config).exists()


def test_sigterm_mid_climb_restores_the_original_tuple(
    loaded_server: MariaDBServer, tmp_path: Path
) -> None:
    loaded_server.sql(f"SET GLOBAL {SIZE} = 9")
    config = write_config(tmp_path, loaded_server, bounds={SIZE: (1, 6)}, climb_max_s=60)
    agent = AgentProcess(config, agent_env(loaded_server), tmp_path / "agent.log")
    try:
        agent.wait_for(
            lambda: (
                loaded_server.variable(SIZE) != 9
                and (agent.status() or {}).get("phase") == "climbing"
            ),
            timeout=20,
            what="a climb in progress",
        )
    finally:
        code = agent.terminate(signal.SIGTERM)
    assert code == 0, agent.log()
    assert loaded_server.variable(SIZE) == 9
    assert not _state_file(config).exists()
    assert "received SIGTERM" in agent.log()


def test_kill9_mid_climb_then_next_start_restores_first(
    loaded_server: MariaDBServer, tmp_path: Path
) -> None:
    loaded_server.sql(f"SET GLOBAL {SIZE} = 7")
    config = write_config(tmp_path, loaded_server, bounds={SIZE: (1, 4)})
    crashed = AgentProcess(config, agent_env(loaded_server), tmp_path / "crashed.log")
    try:
        crashed.wait_for(
            lambda: loaded_server.variable(SIZE) != 7, timeout=20, what="a knob change"
        )
    finally:
        crashed.kill()
    assert _state_file(config).exists()
    assert loaded_server.variable(SIZE) != 7

    config = write_config(tmp_path, loaded_server, bounds={SIZE: (1, 4)}, profile_window_s=6.0)
    restarted = AgentProcess(config, agent_env(loaded_server), tmp_path / "restarted.log")
    try:
        restarted.wait_for_log("restored the original tuple", timeout=20)
        # Restored before anything else: before profiling starts and any new change.
        assert loaded_server.variable(SIZE) == 7
        log = restarted.log()
        assert log.index("restored the original tuple") < log.index("profiling the workload")
    finally:
        code = restarted.terminate()
    assert code == 0
    assert loaded_server.variable(SIZE) == 7


def test_manual_set_global_during_climb_is_adopted_not_reverted(
    loaded_server: MariaDBServer, tmp_path: Path
) -> None:
    loaded_server.sql(f"SET GLOBAL {SIZE} = 3")
    config = write_config(tmp_path, loaded_server, bounds={SIZE: (1, 8)}, climb_max_s=60)
    agent = AgentProcess(config, agent_env(loaded_server), tmp_path / "agent.log")
    try:
        agent.wait_for(
            lambda: (
                _state_file(config).exists() and (agent.status() or {}).get("phase") == "climbing"
            ),
            timeout=20,
            what="a climb in progress",
        )
        agent_value = loaded_server.variable(SIZE)
        dba_value = 4 if agent_value != 4 else 1  # at most the 4 connections sysbench opens
        loaded_server.sql(f"SET GLOBAL {SIZE} = {dba_value}")
        agent.wait_for_log("knobs changed outside the agent", timeout=10)
        # The agent climbs on from the DBA's value instead of putting its own back.
        agent.wait_for_log(
            f"climbing again from the adopted tuple {{'thread_pool_size': {dba_value}}}",
            timeout=5,
        )
        assert loaded_server.variable(SIZE) == dba_value
        saved = json.loads(_state_file(config).read_text())
        assert saved["original_tuple"] == {SIZE: dba_value}
    finally:
        code = agent.terminate()
    assert code == 0
    # Stopping restores the adopted baseline: the DBA's value, never the 3 from before.
    assert loaded_server.variable(SIZE) == dba_value


def test_test_command_passes_and_dry_run_changes_nothing(
    loaded_server: MariaDBServer, tmp_path: Path
) -> None:
    loaded_server.sql(f"SET GLOBAL {SIZE} = 5")
    config = write_config(tmp_path, loaded_server)
    env = agent_env(loaded_server)
    tested = run_cli(config, "test", env=env)
    assert tested.returncode == 0, tested.stderr
    assert "test passed" in tested.stdout
    assert "connection through extra_port: yes" in tested.stdout

    dry = run_cli(config, "dry-run", "--window", "2", env=env)
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)
    assert plan["dry_run"] is True
    assert plan["current_tuple"] == {SIZE: 5}
    assert plan["profile"]["connections"] == 4
    assert plan["profile"]["tps"] > 0
    assert plan["recommendation"]["source"] == "local-heuristic"
    assert 1 <= plan["would_apply"][SIZE] <= 12
    assert loaded_server.variable(SIZE) == 5
    assert not _state_file(config).exists()


def test_server_without_pool_of_threads_is_refused_with_exit_code_4(
    mariadb_one_thread_server: MariaDBServer, tmp_path: Path
) -> None:
    config = write_config(tmp_path, mariadb_one_thread_server)
    env = agent_env(mariadb_one_thread_server)
    for command in ("test", "run"):
        result = run_cli(config, command, env=env, timeout=60)
        assert result.returncode == 4, (command, result.stdout, result.stderr)
        assert "thread_handling = pool-of-threads" in result.stderr
        assert "my.cnf" in result.stderr
    assert not _state_file(config).exists()


def test_wrong_password_is_a_clear_error(mariadb_server: MariaDBServer, tmp_path: Path) -> None:
    config = write_config(tmp_path, mariadb_server)
    env = agent_env(mariadb_server, POOLTUNE_DB_PASSWORD="wrong")
    result = run_cli(config, "test", env=env)
    assert result.returncode == 4
    assert "access denied" in result.stderr.lower()


def test_restore_command_puts_back_the_saved_tuple(
    mariadb_server: MariaDBServer, tmp_path: Path
) -> None:
    from agents.knobs import Engine
    from agents.state import OriginalTupleFile

    config = write_config(tmp_path, mariadb_server)
    mariadb_server.sql(f"SET GLOBAL {SIZE} = 3")
    OriginalTupleFile(_state_file(config)).save(Engine.MARIADB, {SIZE: 7})
    env = agent_env(mariadb_server)
    status = run_cli(config, "status", env=env)
    assert json.loads(status.stdout)["saved_original_tuple"] == {SIZE: 7}
    restored = run_cli(config, "restore", env=env)
    assert restored.returncode == 0, restored.stderr
    assert mariadb_server.variable(SIZE) == 7
    assert not _state_file(config).exists()


def test_sighup_reloads_the_config_and_a_broken_file_is_survived(
    loaded_server: MariaDBServer, tmp_path: Path
) -> None:
    loaded_server.sql(f"SET GLOBAL {SIZE} = 2")
    config = write_config(tmp_path, loaded_server, bounds={SIZE: (1, 12)}, climb_max_s=60)
    agent = AgentProcess(config, agent_env(loaded_server), tmp_path / "agent.log")
    try:
        agent.wait_for(
            lambda: (agent.status() or {}).get("phase") in ("climbing", "holding"),
            timeout=20,
            what="a climb",
        )
        config.write_text(config.read_text().replace("[1, 12]", "[5, 6]"))
        agent.process.send_signal(signal.SIGHUP)
        agent.wait_for_log("configuration reloaded", timeout=10)
        agent.wait_for(
            lambda: 5 <= loaded_server.variable(SIZE) <= 6, timeout=10, what="the new bounds"
        )
        log_before = len(agent.log())
        config.write_text("[agent\nbroken")
        agent.process.send_signal(signal.SIGHUP)
        agent.wait_for_log("configuration not reloaded", timeout=10)
        time.sleep(1.0)
        assert agent.process.poll() is None
        later = _applied_values(agent.log()[log_before:])
        assert all(5 <= value <= 6 for value in later), later
    finally:
        code = agent.terminate()
    assert code == 0
    assert loaded_server.variable(SIZE) == 2
