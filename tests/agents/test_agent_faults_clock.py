"""The wall clock stepped by an hour mid-climb, on the suite's real MariaDB (docs/agent.md,
"Faults").

The agent times everything on the monotonic clock and uses the wall clock only for dates, so
a step moves no decision: the climb neither ends early nor restarts, and its report is dated
consistently (it ends after it starts), delivered once and never duplicated.

In-process, the loop's ``wall_clock`` is injected, and the server's ``Uptime`` steps with it
(on one host MariaDB's uptime follows the wall clock): that must not look like a restart. In
a subprocess, ``tests/agents/wall_clock_shim.py`` steps the whole agent process's wall clock.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from agents.config import TargetSection, parse_config
from agents.loop import AgentLoop, Phase
from agents.targets.base import Snapshot
from agents.targets.mariadb import MariaDBTarget
from agents.wiring import assemble_agent
from tests.agents.agent_process import AGENT, AgentProcess, agent_env, run_cli, write_config
from tests.agents.service_process import ServiceProcess, service_on_scratch_database
from tests.agents.wall_clock_shim import OFFSET_FILE_ENV, step_wall_clock
from tests.fixtures.mariadb import MariaDBServer, SysbenchLoad

pytestmark = [pytest.mark.slow, pytest.mark.mariadb]

SIZE = "thread_pool_size"
ORIGINAL = 9
CLIMB_MAX_S = 8.0
HOUR_S = 3600.0


class SameHostClock(MariaDBTarget):
    """The real target; the server's uptime follows the stepped wall clock, as on one host."""

    def __init__(self, settings: TargetSection, offset: list[float], knobs: list[str]) -> None:
        super().__init__(settings, tuned_knobs=knobs)
        self.offset = offset

    def read_counters(self) -> Snapshot:
        snapshot = super().read_counters()
        return dataclasses.replace(snapshot, uptime_s=snapshot.uptime_s + self.offset[0])


@pytest.fixture(autouse=True)
def _reset_pool_size(mariadb_server: MariaDBServer) -> object:
    yield None
    mariadb_server.sql(f"SET GLOBAL {SIZE} = 2")


def _wait(predicate: object, *, timeout: float, what: str) -> None:
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _check_dates(started_at: datetime, finished_at: datetime, trace_end_s: float) -> None:
    duration = (finished_at - started_at).total_seconds()
    assert duration >= 0
    assert abs(duration - trace_end_s) < 3.0, (duration, trace_end_s)


def test_wall_clock_steps_mid_climb_in_process_with_the_servers_uptime(
    mariadb_server: MariaDBServer,
    sysbench: SysbenchLoad,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    mariadb_server.sql(f"SET GLOBAL {SIZE} = {ORIGINAL}")
    sysbench.start("oltp_read_only", threads=4, time_s=120)
    config = parse_config(
        {
            "agent": {
                "state_dir": str(tmp_path / "state"),
                "runtime_dir": str(tmp_path / "run"),
                "sample_period_s": 0.5,
                "profile_window_s": 2.0,
                "climb_max_s": CLIMB_MAX_S,
            },
            "target": mariadb_server.target_section(),
            "climber": {"knobs": [SIZE]},
            "bounds": {SIZE: [1, 6]},
        },
        env={},
    )
    offset = [0.0]
    stop = threading.Event()
    loop: AgentLoop = assemble_agent(
        config,
        target=SameHostClock(config.target, offset, config.tuned_knob_names),
        stop=stop,
        wall_clock=lambda: time.time() + offset[0],
    )
    caplog.set_level(logging.INFO, logger="agents")
    loop.start()
    runner = threading.Thread(target=loop.run, daemon=True)
    runner.start()
    try:
        _wait(lambda: loop.phase is Phase.CLIMBING, timeout=20, what="a climb")
        climb = loop.climb
        assert climb is not None
        time.sleep(1.0)
        offset[0] = -HOUR_S  # set back an hour ...
        time.sleep(1.5)
        offset[0] = +HOUR_S  # ... then two hours ahead
        _wait(lambda: bool(loop.last_report), timeout=CLIMB_MAX_S + 10, what="the report")
    finally:
        stop.set()
        runner.join(timeout=30)
        loop.shutdown()
    assert mariadb_server.variable(SIZE) == ORIGINAL
    assert not config.state_file.exists()
    log = caplog.text
    # The uptime steps were seen for what they are: no restart, no new profile mid-climb.
    assert "its clock was stepped, not a restart" in log
    assert "the server restarted" not in log
    assert loop.counters.server_restarts == 0
    assert loop.climb is climb  # the same climb ended in the report
    reports = [item.report for item in loop.uploader.spool.pending()]
    assert len(reports) == loop.counters.reports == 1
    (report,) = reports
    assert report.idempotency_key == loop.last_report["idempotency_key"]
    trace_end = report.trace[-1].t_s
    _check_dates(report.started_at, report.finished_at, trace_end)
    if not report.converged:  # ended by climb_max_s on the monotonic clock, not earlier
        assert trace_end >= CLIMB_MAX_S - 1.0


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ServiceProcess]:
    with service_on_scratch_database(tmp_path / "service.log", prefix="pooltune_clock") as svc:
        yield svc


@pytest.mark.postgres
def test_wall_clock_steps_mid_climb_in_the_agent_process(
    mariadb_server: MariaDBServer,
    sysbench: SysbenchLoad,
    service: ServiceProcess,
    tmp_path: Path,
) -> None:
    mariadb_server.sql(f"SET GLOBAL {SIZE} = {ORIGINAL}")
    sysbench.start("oltp_read_only", threads=4, time_s=120)
    config = write_config(
        tmp_path,
        mariadb_server,
        bounds={SIZE: (1, 6)},
        service_url=service.url,
        climb_max_s=CLIMB_MAX_S,
    )
    offset_file = tmp_path / "wall-clock-offset"
    step_wall_clock(offset_file, 0.0)
    env = agent_env(mariadb_server, **{OFFSET_FILE_ENV: str(offset_file)})
    enrolled = run_cli(config, "enroll", "--token", service.enrollment_token(), env=env)
    assert enrolled.returncode == 0, enrolled.stderr
    shim = [AGENT[0], "-m", "tests.agents.wall_clock_shim"]
    agent = AgentProcess(config, env, tmp_path / "agent.log", command=shim)
    try:
        agent.wait_for(
            lambda: (agent.status() or {}).get("phase") == "climbing",
            timeout=25,
            what="a climb",
        )
        time.sleep(1.0)
        step_wall_clock(offset_file, -HOUR_S)
        time.sleep(1.5)
        step_wall_clock(offset_file, +HOUR_S)
        agent.wait_for(
            lambda: ((agent.status() or {}).get("last_report") or {}).get("delivered") is True,
            timeout=CLIMB_MAX_S + 15,
            what="the report delivered",
        )
        status = agent.status()
        assert status is not None
        key = status["last_report"]["idempotency_key"]
    finally:
        code = agent.terminate()
    assert code == 0, agent.log()[-3000:]
    assert mariadb_server.variable(SIZE) == ORIGINAL
    log = agent.log()
    assert "unexpected error" not in log
    assert log.count("climbing from") == status["counters"]["climbs"]
    listed = service.admin("GET", "/v1/reports", params={"limit": 100}).json()["items"]
    keys = [item["idempotency_key"] for item in listed]
    assert keys.count(key) == 1
    assert len(keys) == len(set(keys)) == status["counters"]["reports"]
    stored = service.admin("GET", f"/v1/reports/{listed[keys.index(key)]['id']}")
    assert stored.status_code == 200, stored.text
    report = stored.json()["report"]
    started = datetime.fromisoformat(report["started_at"])
    finished = datetime.fromisoformat(report["finished_at"])
    _check_dates(started, finished, report["trace"][-1]["t_s"])
    if not report["converged"]:
        assert report["trace"][-1]["t_s"] >= CLIMB_MAX_S - 1.0
