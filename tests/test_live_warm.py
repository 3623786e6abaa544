"""The live benchmarks' warm service: every agent run on one host after the first reuses
the host's agent token, as a deployed agent keeps it in its state directory (the service
refuses a second enrolment of a host: 409)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.knobs import Engine
from agents.service_client import RequestRejected, enroll_agent
from agents.targets.simulated import SimulatedTarget
from benchmarks import fleet
from benchmarks.live.agent_runs import enrol
from benchmarks.live.warm import WarmService

pytestmark = [pytest.mark.postgres]


def test_runs_on_one_host_enrol_it_once_and_share_its_token(tmp_path: Path) -> None:
    with fleet.live_service(log_path=tmp_path / "service.log") as service:
        warm = WarmService(
            url=service.url,
            enrollment_token=service.enrollment_token(uses=4, description="test"),
            description="test",
        )
        host = SimulatedTarget.from_settings(engine=Engine.MARIADB, seed=1, hostname="db-1")
        first = enrol(warm, host)
        again = SimulatedTarget.from_settings(engine=Engine.MARIADB, seed=2, hostname="db-1")
        assert enrol(warm, again) == first
        other = SimulatedTarget.from_settings(engine=Engine.MARIADB, seed=3, hostname="db-2")
        assert enrol(warm, other) != first
        # What the cache spares the runs after the first: the service refuses the host.
        with pytest.raises(RequestRejected) as refused:
            enroll_agent(
                service.url,
                warm.enrollment_token,
                again.host_facts(),
                timeout_s=10.0,
                max_attempts=1,
            )
        assert refused.value.status_code == 409
