"""Reports reach the real service exactly once, even when it is down at the time."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from service.migrate import upgrade
from tests.agents.agent_process import AgentProcess, agent_env, run_cli, write_config
from tests.agents.service_process import ADMIN, ServiceProcess
from tests.fixtures.mariadb import MariaDBServer, SysbenchLoad, free_port
from tests.fixtures.postgres import scratch_database

pytestmark = [pytest.mark.slow, pytest.mark.mariadb, pytest.mark.postgres]


@pytest.fixture
def service_process(tmp_path: Path) -> Iterator[ServiceProcess]:
    # Its own database: the service commits for real, and the suite's shared database must
    # stay empty for the tests that count rows in it.
    with scratch_database("pooltune_agent_uploads") as database_url:
        upgrade(database_url)
        service = ServiceProcess(database_url, free_port(), tmp_path / "service.log")
        try:
            yield service
        finally:
            service.stop()


def test_report_spooled_while_service_down_then_delivered_exactly_once(
    mariadb_server: MariaDBServer,
    sysbench: SysbenchLoad,
    service_process: ServiceProcess,
    tmp_path: Path,
) -> None:
    # Enrol while the service is up: the token is stored 0600.
    service_process.start()
    created = httpx.post(
        f"{service_process.url}/v1/enrollment-tokens",
        json={"description": "agent upload test"},
        headers=ADMIN,
    )
    assert created.status_code == 201, created.text
    config = write_config(tmp_path, mariadb_server, service_url=service_process.url, climb_max_s=6)
    env = agent_env(mariadb_server)
    refused = run_cli(config, "enroll", "--token", "pte_not-a-real-token", env=env)
    assert refused.returncode == 6
    assert "enrolment failed: service answered 401" in refused.stderr
    enrolled = run_cli(config, "enroll", "--token", created.json()["token"], env=env)
    assert enrolled.returncode == 0, enrolled.stderr
    token_file = tmp_path / "state" / "agent-token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600

    # The service goes down; the agent climbs and has to keep its report.
    service_process.stop()
    sysbench.start("oltp_read_only", threads=4, time_s=120)
    agent = AgentProcess(config, env, tmp_path / "agent.log")
    try:
        agent.wait_for(
            lambda: (
                ((agent.status() or {}).get("last_report") or {}).get("idempotency_key") is not None
                and (agent.status() or {}).get("spooled_reports") == 1
            ),
            timeout=40,
            what="a spooled report",
        )
        assert "using the local heuristic" in agent.log()
        key = agent.status()["last_report"]["idempotency_key"]  # type: ignore[index]
        spooled = list((tmp_path / "state" / "spool").glob(f"*-{key}.json"))
        assert len(spooled) == 1

        # The service comes back: the spool drains by itself.
        service_process.start()
        agent.wait_for(
            lambda: (agent.status() or {}).get("spooled_reports") == 0,
            timeout=30,
            what="the spool to drain",
        )
        assert (agent.status() or {})["last_report"]["delivered"] is True
    finally:
        code = agent.terminate()
    assert code == 0
    assert not list((tmp_path / "state" / "spool").glob("*.json"))

    listed = httpx.get(
        f"{service_process.url}/v1/reports", params={"limit": 100}, headers=ADMIN
    ).json()
    stored = [r for r in listed["items"] if r["idempotency_key"] == key]
    assert len(stored) == 1
    assert stored[0]["start_source"] == "local-heuristic"
