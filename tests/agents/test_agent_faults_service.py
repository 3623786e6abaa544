"""The service unreachable for a whole climb, on the suite's real MariaDB and the real
service (docs/agent.md, "Faults").

The agent enrols (a wrong token is refused; the right one is stored 0600), starts from
its local heuristic, climbs, keeps its report in the spool, which is capped
(``[service] spool_max_bytes``: the oldest reports are dropped and counted), and delivers
what the spool holds once the service is back, each report exactly once.
"""

from __future__ import annotations

import socket
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.knobs import Engine
from agents.spool import Spool
from agents.wire import ClimbReport, HostFacts
from tests.agents.agent_process import AgentProcess, agent_env, run_cli, write_config
from tests.agents.reports import make_report
from tests.agents.service_process import ServiceProcess, service_on_scratch_database
from tests.fixtures.mariadb import MariaDBServer, SysbenchLoad

pytestmark = [pytest.mark.slow, pytest.mark.mariadb, pytest.mark.postgres]

SIZE = "thread_pool_size"
ORIGINAL = 9
#: The smallest cap the configuration accepts.
SPOOL_MAX_BYTES = 10_000


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ServiceProcess]:
    with service_on_scratch_database(tmp_path / "service.log", prefix="pooltune_faults") as svc:
        yield svc


@pytest.fixture(autouse=True)
def _reset_pool_size(mariadb_server: MariaDBServer) -> object:
    yield None
    mariadb_server.sql(f"SET GLOBAL {SIZE} = 2")


def _earlier_report(server: MariaDBServer) -> ClimbReport:
    """A report of an earlier climb of this host (what an agent offline for a while has)."""
    (version,) = server.sql("SELECT VERSION()")[0]
    host = HostFacts(
        hostname=socket.gethostname(),
        engine=Engine.MARIADB,
        engine_version=str(version),
        cpu_count=2,
        memory_bytes=1 << 30,
    )
    return make_report(trace_samples=8).model_copy(update={"host": host})


def _stored(service: ServiceProcess) -> list[tuple[str, str]]:
    """Each stored report's idempotency key and start source."""
    listed = service.admin("GET", "/v1/reports", params={"limit": 100})
    assert listed.status_code == 200, listed.text
    return [(item["idempotency_key"], item["start_source"]) for item in listed.json()["items"]]


def test_service_down_for_the_whole_climb_spool_capped_then_each_report_once(
    mariadb_server: MariaDBServer,
    sysbench: SysbenchLoad,
    service: ServiceProcess,
    tmp_path: Path,
) -> None:
    config = write_config(
        tmp_path,
        mariadb_server,
        service_url=service.url,
        climb_max_s=6,
        extra=f"spool_max_bytes = {SPOOL_MAX_BYTES}",
    )
    env = agent_env(mariadb_server)
    refused = run_cli(config, "enroll", "--token", "pte_not-a-real-token", env=env)
    assert refused.returncode == 6
    assert "enrolment failed: service answered 401" in refused.stderr
    enrolled = run_cli(config, "enroll", "--token", service.enrollment_token(), env=env)
    assert enrolled.returncode == 0, enrolled.stderr
    assert stat.S_IMODE((tmp_path / "state" / "agent-token").stat().st_mode) == 0o600
    service.stop()

    # Reports of earlier climbs wait in the spool, nearly filling it.
    spool = Spool(tmp_path / "state" / "spool", max_bytes=SPOOL_MAX_BYTES)
    earlier: list[ClimbReport] = []
    while True:
        report = _earlier_report(mariadb_server)
        if spool.size_bytes() + len(spool._envelope(report, 0)) > SPOOL_MAX_BYTES:
            break
        spool.put(report)
        earlier.append(report)
    assert len(earlier) >= 2 and spool.dropped == 0

    mariadb_server.sql(f"SET GLOBAL {SIZE} = {ORIGINAL}")
    sysbench.start("oltp_read_only", threads=4, time_s=120)
    agent = AgentProcess(config, env, tmp_path / "agent.log")

    def status() -> dict[str, Any]:
        return agent.status() or {}

    try:
        agent.wait_for(
            lambda: bool((status().get("last_report") or {}).get("idempotency_key")),
            timeout=40,
            what="the climb's report",
        )
        log = agent.log()
        assert "no recommendation from the service" in log
        assert "using the local heuristic" in log
        time.sleep(1.5)  # drain attempts against the dead service (drain_every_s = 1)
        held = status()
        key = held["last_report"]["idempotency_key"]
        assert held["last_report"]["delivered"] is False
        # The cap holds: the oldest earlier reports made room for the new one, counted.
        assert held["spool_dropped"] >= 1
        kept = [item.report.idempotency_key for item in spool.pending()]
        dropped = [r.idempotency_key for r in earlier[: held["spool_dropped"]]]
        assert kept == [r.idempotency_key for r in earlier[len(dropped) :]] + [key]
        assert held["spooled_reports"] == len(kept)
        assert spool.size_bytes() <= SPOOL_MAX_BYTES
        assert "spool full: dropped the oldest report" in log
        assert "service unreachable" in log

        service.start()
        agent.wait_for(
            lambda: status().get("spooled_reports") == 0, timeout=30, what="the spool to drain"
        )
        assert status()["last_report"]["delivered"] is True
        time.sleep(1.5)  # later drains find nothing to send again
    finally:
        code = agent.terminate()
    assert code == 0, agent.log()[-3000:]
    final = status()
    assert mariadb_server.variable(SIZE) == ORIGINAL
    pairs = _stored(service)
    sources = dict(pairs)
    stored = [stored_key for stored_key, _ in pairs]
    assert len(stored) == len(set(stored))  # nothing twice
    # A later climb that ended before the service was up spooled its report too and pushed
    # more of the earlier ones out: the cap drops the oldest first, counted.
    assert held["spool_dropped"] <= final["spool_dropped"] <= len(earlier)
    lost = {r.idempotency_key for r in earlier[: final["spool_dropped"]]}
    assert set(kept) - lost <= set(stored)  # everything the spool kept arrived
    assert sources[key] == "local-heuristic"
    assert not lost & set(stored)  # what the cap dropped never did
    # With the service back the agent may climb again on the noise: those reports are on
    # the service or still in the spool, and nowhere twice.
    later = final["counters"]["reports"] - 1
    waiting = [item.report.idempotency_key for item in spool.pending()]
    assert not set(waiting) & set(stored)
    assert len(stored) + len(waiting) == len(set(kept) - lost) + later
