"""The agent under a server restart, on the suite's real MariaDB (docs/agent.md, "Faults").

The server restarts mid-climb and comes back with its startup values: the agent survives,
does not take the restart for a DBA's change, profiles again, climbs again, and on stop puts
back the tuple it saved before its first change, not the value the restart left.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lab.mariadb import restart_mariadb
from tests.agents.agent_process import AgentProcess, agent_env, write_config
from tests.fixtures.mariadb import MariaDBServer, SysbenchLoad

pytestmark = [pytest.mark.slow, pytest.mark.mariadb]

SIZE = "thread_pool_size"


@pytest.fixture(autouse=True)
def _reset_pool_size(mariadb_server: MariaDBServer) -> object:
    yield None
    mariadb_server.sql(f"SET GLOBAL {SIZE} = 2")


def _climbs(agent: AgentProcess) -> int:
    return int(((agent.status() or {}).get("counters") or {}).get("climbs", 0))


def test_restart_mid_climb_is_not_a_dba_change_and_stop_restores_the_true_original(
    mariadb_server: MariaDBServer, sysbench: SysbenchLoad, tmp_path: Path
) -> None:
    startup_value = mariadb_server.variable(SIZE)  # what a restart brings back
    original = 9 if startup_value != 9 else 8  # set at runtime: a restart loses it
    mariadb_server.sql(f"SET GLOBAL {SIZE} = {original}")
    sysbench.start("oltp_read_only", threads=4, time_s=120)
    config = write_config(tmp_path, mariadb_server, bounds={SIZE: (1, 6)}, climb_max_s=60)
    agent = AgentProcess(config, agent_env(mariadb_server), tmp_path / "agent.log")
    state_file = tmp_path / "state" / "original-tuple.json"
    try:
        agent.wait_for(
            lambda: (
                mariadb_server.variable(SIZE) != original
                and (agent.status() or {}).get("phase") == "climbing"
            ),
            timeout=25,
            what="a climb in progress",
        )
        assert json.loads(state_file.read_text())["original_tuple"] == {SIZE: original}

        sysbench.stop_all()  # its connections die with the server anyway
        restart_mariadb(mariadb_server)
        assert mariadb_server.variable(SIZE) == startup_value
        sysbench.start("oltp_read_only", threads=4, time_s=120)

        agent.wait_for_log("the server restarted", timeout=30)
        # It profiles again and climbs again from the restarted server's tuple.
        agent.wait_for(
            lambda: _climbs(agent) >= 2 and (agent.status() or {}).get("phase") == "climbing",
            timeout=30,
            what="a new climb after the restart",
        )
        status = agent.status()
        assert status is not None
        log = agent.log()
        restart_at = log.index("the server restarted")
        assert "profiling the workload" in log[restart_at:]
        # The new server process is checked again: its CPU time is read from its own pid.
        profiles = re.findall(r"profile: .*", log)
        assert len(profiles) >= 2 and "cpu unknown" not in profiles[0], profiles
        assert "cpu unknown" not in re.findall(r"profile: .*", log[restart_at:])[0]
        assert "knobs changed outside the agent" not in log
        assert status["counters"]["manual_changes"] == 0
        assert status["counters"]["server_restarts"] == 1
        # The saved original is still the one from before the first change.
        assert status["original_tuple"] == {SIZE: original}
        assert json.loads(state_file.read_text())["original_tuple"] == {SIZE: original}
    finally:
        code = agent.terminate()
    assert code == 0, agent.log()[-3000:]
    assert mariadb_server.variable(SIZE) == original
    assert not state_file.exists()
