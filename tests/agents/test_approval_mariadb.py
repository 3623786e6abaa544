"""Approve and recommend modes of the real ``pooltune-agent`` on the suite's MariaDB under
sysbench load, asking the real service (its own PostgreSQL database). The server's
``thread_pool_size`` is read from the server itself, every 0.1 s, while nothing may change."""

from __future__ import annotations

import itertools
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.agents.agent_process import AgentProcess, agent_env, run_cli, write_config
from tests.agents.service_process import ServiceProcess, service_on_scratch_database
from tests.fixtures.mariadb import MariaDBServer, SysbenchLoad

pytestmark = [pytest.mark.slow, pytest.mark.mariadb, pytest.mark.postgres]

SIZE = "thread_pool_size"
ORIGINAL = 7
APPROVAL = """
[approval]
poll_initial_s = 0.5
poll_max_s = 1.0
retry_after_s = 3600.0
"""


def _start_load(server: MariaDBServer, sysbench: SysbenchLoad) -> MariaDBServer:
    server.sql(f"SET GLOBAL {SIZE} = {ORIGINAL}")
    sysbench.start("oltp_read_only", threads=4, time_s=180)
    return server


@pytest.fixture(autouse=True)
def _reset_pool_size(mariadb_server: MariaDBServer) -> Iterator[None]:
    yield None
    mariadb_server.sql(f"SET GLOBAL {SIZE} = 2")


@pytest.fixture
def loaded_server(
    service: ServiceProcess, mariadb_server: MariaDBServer, sysbench: SysbenchLoad
) -> MariaDBServer:
    """The suite's server under load, from after the service is up: on two loaded cores a
    service takes four times as long to start."""
    return _start_load(mariadb_server, sysbench)


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ServiceProcess]:
    with service_on_scratch_database(
        tmp_path / "service.log", prefix="pooltune_approval_mariadb"
    ) as running:
        yield running


class Watcher:
    """Reads the server's thread_pool_size every 0.1 s in a thread."""

    def __init__(self, server: MariaDBServer) -> None:
        self.server = server
        self.seen: list[int] = []
        self.read_at: list[float] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._done.is_set():
            self.seen.append(self.server.variable(SIZE))
            self.read_at.append(time.monotonic())
            time.sleep(0.1)

    def gaps_below(self, seconds: float) -> bool:
        """Whether consecutive readings all lie less than ``seconds`` apart: a change held
        that long would have been seen."""
        return len(self.read_at) > 1 and all(
            b - a < seconds for a, b in itertools.pairwise(self.read_at)
        )

    @contextmanager
    def watching(self) -> Iterator[list[int]]:
        self._thread.start()
        try:
            yield self.seen
        finally:
            self._done.set()
            self._thread.join(timeout=5)


def _enrolled_agent(
    tmp_path: Path, server: MariaDBServer, service: ServiceProcess, *, mode: str
) -> tuple[Path, dict[str, str]]:
    config = write_config(
        tmp_path, server, service_url=service.url, climb_max_s=30, mode=mode, extra=APPROVAL
    )
    env = agent_env(server)
    enrolled = run_cli(config, "enroll", "--token", service.enrollment_token(), env=env)
    assert enrolled.returncode == 0, enrolled.stderr
    return config, env


def _phase(agent: AgentProcess) -> str | None:
    return (agent.status() or {}).get("phase")


def _approvals(service: ServiceProcess) -> list[dict[str, Any]]:
    listed = service.admin("GET", "/v1/approvals")
    assert listed.status_code == 200, listed.text
    items: list[dict[str, Any]] = listed.json()["items"]
    return items


def _applied(log: str) -> list[int]:
    return [int(v) for v in re.findall(r"applied \{'thread_pool_size': (\d+)\}", log)]


def _state_file(config: Path) -> Path:
    return config.parent / "state" / "original-tuple.json"


def _await_request(agent: AgentProcess) -> int:
    agent.wait_for(
        lambda: (
            _phase(agent) == "awaiting-approval"
            and (agent.status() or {}).get("approval_id") is not None
        ),
        timeout=40,
        what="a pending approval request",
    )
    approval_id = (agent.status() or {})["approval_id"]
    assert isinstance(approval_id, int)
    return approval_id


def test_approve_mode_changes_nothing_until_approved_then_applies_the_approved_tuple(
    loaded_server: MariaDBServer, service: ServiceProcess, tmp_path: Path
) -> None:
    config, env = _enrolled_agent(tmp_path, loaded_server, service, mode="approve")
    agent = AgentProcess(config, env, tmp_path / "agent.log")
    try:
        with Watcher(loaded_server).watching() as seen:
            approval_id = _await_request(agent)
            time.sleep(4.0)  # pending: the agent polls, the server keeps its tuple
            assert _phase(agent) == "awaiting-approval"
            assert not _state_file(config).exists()
        assert len(seen) > 20 and set(seen) == {ORIGINAL}, sorted(set(seen))
        assert _applied(agent.log()) == []
        (request,) = _approvals(service)
        assert (request["id"], request["state"]) == (approval_id, "pending")
        assert request["current_tuple"] == {SIZE: ORIGINAL}

        approved = service.admin(
            "POST", f"/v1/approvals/{approval_id}/approve", json={"values": {SIZE: 3}}
        )
        assert approved.status_code == 200, approved.text
        agent.wait_for_log("applied {'thread_pool_size': 3}", timeout=20)
        agent.wait_for(
            lambda: _phase(agent) in ("climbing", "holding"), timeout=10, what="the climb"
        )
        assert _applied(agent.log())[0] == 3
        assert (agent.status() or {})["approval"]["state"] == "applied"
    finally:
        code = agent.terminate()
    assert code == 0, agent.log()
    assert all(1 <= value <= 12 for value in _applied(agent.log()))
    assert loaded_server.variable(SIZE) == ORIGINAL


def test_a_rejected_request_leaves_the_tuple_as_it_was(
    loaded_server: MariaDBServer, service: ServiceProcess, tmp_path: Path
) -> None:
    config, env = _enrolled_agent(tmp_path, loaded_server, service, mode="approve")
    agent = AgentProcess(config, env, tmp_path / "agent.log")
    try:
        with Watcher(loaded_server).watching() as seen:
            approval_id = _await_request(agent)
            rejected = service.admin(
                "POST", f"/v1/approvals/{approval_id}/reject", json={"reason": "not today"}
            )
            assert rejected.status_code == 200, rejected.text
            agent.wait_for(lambda: _phase(agent) == "idle", timeout=15, what="idle")
            time.sleep(3.0)
        status = agent.status() or {}
        assert status["approval"]["state"] == "rejected"
        assert status["approval"]["reason"] == "not today"
        assert "the knobs stay as they are" in agent.log()
    finally:
        code = agent.terminate()
    assert code == 0, agent.log()
    assert set(seen) == {ORIGINAL}, sorted(set(seen))
    assert _applied(agent.log()) == []
    assert not _state_file(config).exists()
    assert loaded_server.variable(SIZE) == ORIGINAL


def test_a_request_that_expires_leaves_the_tuple_as_it_was(
    mariadb_server: MariaDBServer, sysbench: SysbenchLoad, tmp_path: Path
) -> None:
    # The service caps every request's wait at 0.002 h (7.2 s); nobody decides.
    with service_on_scratch_database(
        tmp_path / "service.log",
        prefix="pooltune_approval_expiry",
        extra_env={"POOLTUNE_APPROVAL_TTL_HOURS": "0.002"},
    ) as service:
        loaded_server = _start_load(mariadb_server, sysbench)
        config, env = _enrolled_agent(tmp_path, loaded_server, service, mode="approve")
        agent = AgentProcess(config, env, tmp_path / "agent.log")
        try:
            watcher = Watcher(loaded_server)
            with watcher.watching() as seen:
                approval_id = _await_request(agent)
                agent.wait_for(lambda: _phase(agent) == "idle", timeout=30, what="expiry")
                time.sleep(2.0)
            assert (agent.status() or {})["approval"]["state"] == "expired"
            (request,) = _approvals(service)
            assert (request["id"], request["state"]) == (approval_id, "expired")
        finally:
            code = agent.terminate()
    assert code == 0, agent.log()
    # Watched through the whole 7.2-s wait, never more than 2 s blind (a sample's length).
    assert watcher.read_at[-1] - watcher.read_at[0] > 7.2 and watcher.gaps_below(2.0)
    assert set(seen) == {ORIGINAL}, sorted(set(seen))
    assert _applied(agent.log()) == []
    assert loaded_server.variable(SIZE) == ORIGINAL


def test_recommend_mode_never_changes_a_knob(
    loaded_server: MariaDBServer, service: ServiceProcess, tmp_path: Path
) -> None:
    config, env = _enrolled_agent(tmp_path, loaded_server, service, mode="recommend")
    agent = AgentProcess(config, env, tmp_path / "agent.log")
    try:
        with Watcher(loaded_server).watching() as seen:
            agent.wait_for(lambda: _phase(agent) == "recommended", timeout=40, what="advice")
            time.sleep(4.0)
        status = agent.status() or {}
        assert status["mode"] == "recommend"
        assert status["recommendation"]["source"] == "heuristic"
        assert 1 <= status["recommendation"]["would_apply"][SIZE] <= 12
        assert status["recommendation"]["current_tuple"] == {SIZE: ORIGINAL}
        assert "recommend mode: would apply" in agent.log()
    finally:
        code = agent.terminate()
    assert code == 0, agent.log()
    assert set(seen) == {ORIGINAL}, sorted(set(seen))
    assert _applied(agent.log()) == []
    assert not _state_file(config).exists()
    assert _approvals(service) == []
    shown = run_cli(config, "status", env=env)
    assert '"state": "recommended"' in shown.stdout


def test_restarts_of_agent_and_service_keep_the_same_request_and_change_nothing(
    loaded_server: MariaDBServer, service: ServiceProcess, tmp_path: Path
) -> None:
    config, env = _enrolled_agent(tmp_path, loaded_server, service, mode="approve")
    first = AgentProcess(config, env, tmp_path / "first.log")
    with Watcher(loaded_server).watching() as seen:
        try:
            approval_id = _await_request(first)
            service.stop()
            first.wait_for_log("service not reachable", timeout=15)
            assert _phase(first) == "awaiting-approval"
        finally:
            assert first.terminate() == 0, first.log()
        second = AgentProcess(config, env, tmp_path / "second.log")
        try:
            second.wait_for_log(f"waiting for approval request {approval_id}", timeout=20)
            service.start()
            second.wait_for_log("the service answers again", timeout=20)
            assert (second.status() or {})["approval_id"] == approval_id
            assert [r["id"] for r in _approvals(service)] == [approval_id]
            assert not _state_file(config).exists()
            seen_while_waiting = list(seen)
            # Approved above the agent's bound of 12 (inside the catalog): applied as 12.
            approved = service.admin(
                "POST", f"/v1/approvals/{approval_id}/approve", json={"values": {SIZE: 20}}
            )
            assert approved.status_code == 200, approved.text
            second.wait_for_log("applied {'thread_pool_size': 12}", timeout=20)
            assert "clipped into the agent's bounds" in second.log()
        finally:
            code = second.terminate()
    assert code == 0, second.log()
    assert len(seen_while_waiting) > 20 and set(seen_while_waiting) == {ORIGINAL}
    assert _applied(first.log()) == [] and _applied(second.log())[0] == 12
    assert loaded_server.variable(SIZE) == ORIGINAL
