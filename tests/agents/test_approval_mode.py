"""Approve and recommend modes: the whole agent on a simulated server, asking the real service
(``pooltune-service serve`` on its own PostgreSQL database) and an admin through its API."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from agents.config import ConfigError, Mode, parse_config, reloadable
from agents.loop import AgentLoop, Phase
from agents.service_client import enroll_agent
from agents.sim import SimServer, random_workload
from agents.targets.base import KnobApplyError
from agents.targets.simulated import SimulatedTarget
from agents.wiring import assemble_agent
from tests.agents.service_process import ServiceProcess, service_on_scratch_database
from tests.fixtures.mariadb import free_port

pytestmark = [pytest.mark.postgres]

SIZE = "thread_pool_size"
#: The simulated host's cores: also its thread_pool_size before the agent touches it.
CORES = 8


class Wall:
    """The agent's wall clock, moved by the test (the service keeps its own real one)."""

    def __init__(self) -> None:
        self.now = 1_900_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    log = tmp_path_factory.mktemp("approval-service") / "service.log"
    with service_on_scratch_database(log, prefix="pooltune_approval_mode") as running:
        yield running


class Host:
    """One simulated host enrolled with the service, and its agent."""

    def __init__(
        self,
        service: ServiceProcess,
        tmp_path: Path,
        *,
        url: str = "",
        target_class: type[SimulatedTarget] = SimulatedTarget,
    ) -> None:
        workload = random_workload(np.random.default_rng(0), kind="io", cores=CORES)
        self.target = target_class(
            SimServer(workload, seed=0), hostname=f"approval-{uuid.uuid4().hex[:8]}"
        )
        credentials = enroll_agent(
            service.url,
            service.enrollment_token(),
            self.target.host_facts(),
            timeout_s=10,
            max_attempts=2,
        )
        self.token = credentials.agent_token
        self.host_id = credentials.host_id
        self.service = service
        self.url = url or service.url
        self.state_dir = tmp_path / "state"
        self.wall = Wall()

    def agent(self, mode: str = "approve", **approval: float) -> AgentLoop:
        config = parse_config(
            {
                "agent": {
                    "mode": mode,
                    "state_dir": str(self.state_dir),
                    "sample_period_s": 0.001,
                    "profile_window_s": 10.0,
                },
                "climber": {"knobs": [SIZE]},
                "bounds": {SIZE: [1, 32]},
                "service": {"url": self.url, "max_attempts": 1, "timeout_s": 5.0},
                "approval": {
                    "poll_initial_s": 1.0,
                    "poll_max_s": 4.0,
                    "wait_max_s": 600.0,
                    "retry_after_s": 3600.0,
                    **approval,
                },
            },
            env={},
        )
        loop = assemble_agent(
            config,
            target=self.target,
            agent_token=self.token,
            clock=lambda: self.target.now,
            wall_clock=self.wall,
        )
        loop.start()
        return loop

    def run(self, loop: AgentLoop, samples: int, *, until: Phase | None = None) -> None:
        """``samples`` iterations (2 s of simulated and wall time each), or until ``until``."""
        for _ in range(samples):
            self.wall.now += 2.0
            loop.iterate()
            if until is not None and loop.phase is until:
                return

    def approvals(self) -> list[dict[str, Any]]:
        listed = self.service.admin("GET", "/v1/approvals", params={"host_id": self.host_id})
        assert listed.status_code == 200, listed.text
        items: list[dict[str, Any]] = listed.json()["items"]
        return items

    def original_tuple_file(self) -> Path:
        return self.state_dir / "original-tuple.json"


def _sql(service: ServiceProcess, statement: str, **params: object) -> Any:
    engine = create_engine(service.database_url, poolclass=NullPool)
    try:
        with engine.begin() as connection:
            result = connection.execute(text(statement), params)
            return result.scalar() if result.returns_rows else result.rowcount
    finally:
        engine.dispose()


def test_approve_mode_changes_nothing_until_approved_then_applies_the_edit_inside_bounds(
    service: ServiceProcess, tmp_path: Path
) -> None:
    host = Host(service, tmp_path)
    loop = host.agent()
    host.run(loop, 40)
    assert loop.phase is Phase.AWAITING_APPROVAL
    assert host.target.knob_changes == 0 and host.target.knobs[SIZE] == CORES
    assert not host.original_tuple_file().exists()
    (request,) = host.approvals()
    assert request["state"] == "pending"
    assert request["current_tuple"] == {SIZE: CORES}
    status = loop.status()
    assert status["phase"] == "awaiting-approval" and status["mode"] == "approve"
    assert status["approval_id"] == request["id"]
    assert status["approval"]["would_apply"] == request["recommended_tuple"]
    assert request["recommended_tuple"][SIZE] > CORES  # an IO-bound load: worth changing
    # The one path that changes knobs refuses too, whoever calls it.
    loop._apply({SIZE: 3})
    assert host.target.knob_changes == 0

    approved = host.service.admin(
        "POST", f"/v1/approvals/{request['id']}/approve", json={"values": {SIZE: 100}}
    )
    assert approved.status_code == 200, approved.text
    host.run(loop, 10, until=Phase.CLIMBING)
    assert loop.phase is Phase.CLIMBING
    # 100 is inside the catalog (the service accepts it) but above the agent's bound of 32.
    assert host.target.knobs[SIZE] == 32
    assert loop.climb is not None and loop.climb.start_tuple == {SIZE: 32}
    record = loop.status()["approval"]
    assert record["state"] == "applied"
    assert record["clipped"] == {SIZE: [100, 32]}
    assert json.loads(host.original_tuple_file().read_text())["original_tuple"] == {SIZE: CORES}

    host.run(loop, 400, until=Phase.HOLDING)
    assert loop.phase is Phase.HOLDING
    reports = host.service.admin("GET", "/v1/reports", params={"host_id": host.host_id}).json()
    (report,) = reports["items"]
    assert report["start_tuple"] == {SIZE: 32}
    loop.shutdown()
    assert host.target.knobs[SIZE] == CORES


def test_a_rejected_request_leaves_the_tuple_and_asks_again_only_after_retry_after(
    service: ServiceProcess, tmp_path: Path
) -> None:
    host = Host(service, tmp_path)
    loop = host.agent(retry_after_s=600.0)
    host.run(loop, 40, until=Phase.AWAITING_APPROVAL)
    (request,) = host.approvals()
    rejected = host.service.admin(
        "POST", f"/v1/approvals/{request['id']}/reject", json={"reason": "month-end close"}
    )
    assert rejected.status_code == 200, rejected.text
    host.run(loop, 10, until=Phase.IDLE)
    assert loop.phase is Phase.IDLE
    status = loop.status()
    assert status["approval"]["state"] == "rejected"
    assert status["approval"]["reason"] == "month-end close"
    # Quiet for retry_after_s (600 s of wall time): no change, no new request.
    host.run(loop, 250)
    assert loop.phase is Phase.IDLE
    assert host.target.knob_changes == 0 and host.target.knobs[SIZE] == CORES
    assert len(host.approvals()) == 1
    assert not host.original_tuple_file().exists()
    # Then it profiles and asks again, with a new request; still nothing changed.
    host.run(loop, 100, until=Phase.AWAITING_APPROVAL)
    assert loop.phase is Phase.AWAITING_APPROVAL
    newest, first = host.approvals()
    assert (first["state"], newest["state"]) == ("rejected", "pending")
    assert host.target.knob_changes == 0


def test_a_request_the_service_expires_leaves_the_tuple(
    service: ServiceProcess, tmp_path: Path
) -> None:
    host = Host(service, tmp_path)
    loop = host.agent()
    host.run(loop, 40, until=Phase.AWAITING_APPROVAL)
    (request,) = host.approvals()
    # Nobody decides: move the service's deadline into the past (its own clock expires it).
    moved = _sql(
        service,
        "UPDATE approvals SET expires_at = now() - interval '1 second' WHERE id = :id",
        id=request["id"],
    )
    assert moved == 1
    host.run(loop, 10, until=Phase.IDLE)
    assert loop.phase is Phase.IDLE
    assert loop.status()["approval"]["state"] == "expired"
    assert host.approvals()[0]["state"] == "expired"
    host.run(loop, 20)
    assert host.target.knob_changes == 0 and host.target.knobs[SIZE] == CORES


def test_service_down_keeps_waiting_then_the_agents_own_bound_does_nothing(
    service: ServiceProcess, tmp_path: Path
) -> None:
    host = Host(service, tmp_path, url=f"http://127.0.0.1:{free_port()}")  # nobody listens
    loop = host.agent(wait_max_s=120.0)
    host.run(loop, 40, until=Phase.AWAITING_APPROVAL)
    host.run(loop, 20)
    assert loop.phase is Phase.AWAITING_APPROVAL
    status = loop.status()
    assert status["approval"]["state"] == "unsent"
    assert status["approval"]["last_error"]
    # The key is on disk before the first attempt, so a restart posts the same request.
    saved = json.loads((host.state_dir / "approval.json").read_text())
    assert saved["request"]["idempotency_key"] == status["approval"]["idempotency_key"]
    host.run(loop, 60, until=Phase.IDLE)
    assert loop.phase is Phase.IDLE
    record = loop.status()["approval"]
    assert record["state"] == "expired" and "wait_max_s" in record["reason"]
    assert host.target.knob_changes == 0 and host.target.knobs[SIZE] == CORES


def test_a_restarted_agent_finds_the_same_request_and_applies_it_once_approved(
    service: ServiceProcess, tmp_path: Path
) -> None:
    host = Host(service, tmp_path)
    first = host.agent()
    host.run(first, 40, until=Phase.AWAITING_APPROVAL)
    (request,) = host.approvals()
    first.shutdown()
    # Crash between the POST and its answer: the record knows the key, not the id yet.
    record_path = host.state_dir / "approval.json"
    record = json.loads(record_path.read_text())
    record.update(approval_id=None, state="unsent")
    record_path.write_text(json.dumps(record))

    second = host.agent()
    assert second.phase is Phase.AWAITING_APPROVAL  # resumed at start: no new profiling
    host.run(second, 2)
    assert second.status()["approval_id"] == request["id"]
    assert len(host.approvals()) == 1  # the same key found the same request
    assert host.target.knob_changes == 0

    approved = host.service.admin("POST", f"/v1/approvals/{request['id']}/approve")
    assert approved.status_code == 200, approved.text
    host.run(second, 10, until=Phase.CLIMBING)
    assert second.phase is Phase.CLIMBING
    assert second.climb is not None
    assert second.climb.start_tuple == request["recommended_tuple"]
    second.shutdown()
    assert host.target.knobs[SIZE] == CORES

    # Used up: the next start profiles and asks anew.
    third = host.agent()
    assert third.phase is Phase.PROFILING
    third.shutdown()


class FlakyTarget(SimulatedTarget):
    """Refuses the first knob change (a lost connection at the wrong moment)."""

    refusals = 1

    def apply(self, values: Mapping[str, int]) -> dict[str, int]:
        if self.refusals:
            self.refusals -= 1
            raise KnobApplyError("lost connection while applying")
        return super().apply(values)


def test_an_approved_start_that_fails_to_apply_is_applied_next_time_not_asked_again(
    service: ServiceProcess, tmp_path: Path
) -> None:
    host = Host(service, tmp_path, target_class=FlakyTarget)
    loop = host.agent()
    host.run(loop, 40, until=Phase.AWAITING_APPROVAL)
    (request,) = host.approvals()
    approved = host.service.admin("POST", f"/v1/approvals/{request['id']}/approve")
    assert approved.status_code == 200, approved.text
    host.run(loop, 10, until=Phase.CLIMBING)
    assert loop.phase is Phase.CLIMBING
    assert loop.counters.errors_by_kind == {"KnobApplyError": 1}
    assert loop.climb is not None and loop.climb.start_tuple == request["recommended_tuple"]
    assert len(host.approvals()) == 1
    loop.shutdown()


@pytest.mark.parametrize("online", [True, False], ids=["service", "offline"])
def test_recommend_mode_never_changes_a_knob(
    service: ServiceProcess, tmp_path: Path, online: bool
) -> None:
    host = Host(service, tmp_path)
    if not online:
        host.url = ""
    loop = host.agent("recommend", retry_after_s=300.0)
    host.run(loop, 40, until=Phase.RECOMMENDED)
    assert loop.phase is Phase.RECOMMENDED
    status = loop.status()
    assert status["mode"] == "recommend" and "approval" not in status
    would_apply = status["recommendation"]["would_apply"]
    assert would_apply[SIZE] > CORES
    assert status["recommendation"]["source"] == ("heuristic" if online else "local-heuristic")
    # Past retry_after_s it profiles and recommends again; nothing ever changes.
    host.run(loop, 200)
    assert host.target.knob_changes == 0 and host.target.knobs[SIZE] == CORES
    assert not host.original_tuple_file().exists()
    assert host.approvals() == []
    logged = _sql(
        service,
        "SELECT count(*) FROM recommendation_log WHERE host_id = :host_id",
        host_id=host.host_id,
    )
    assert logged == (2 if online else 0)
    loop.shutdown()
    assert host.target.knob_changes == 0


def test_approve_mode_needs_the_service_and_a_reload_keeps_the_mode(tmp_path: Path) -> None:
    document: dict[str, Any] = {"agent": {"mode": "approve", "state_dir": str(tmp_path)}}
    with pytest.raises(ConfigError, match=r"agent.mode = \"approve\".*\[service\] url"):
        parse_config(document, env={})
    running = parse_config(document, env={"POOLTUNE_SERVICE_URL": "http://127.0.0.1:1"})
    document["agent"]["mode"] = "auto"
    new = parse_config(document, env={})
    assert reloadable(running, new).agent.mode is Mode.APPROVE
