"""Typed factories for service tests: payload builders and rows added + flushed."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from agents.knobs import Engine
from agents.wire import ClimbReport, HostFacts, WorkloadProfile
from service.auth import service as auth_service
from service.auth.models import Agent, EnrollmentToken
from service.hosts.models import Host
from service.recommendations.model_format import LinearPredictor, dump_predictor
from service.registry import service as registry_service
from service.registry.models import ModelVersion
from service.reports import service as report_service
from service.reports.models import Report

STARTED = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)


def host_facts(**overrides: Any) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "hostname": f"db-{uuid.uuid4().hex[:8]}.example.net",
        "engine": "mariadb",
        "engine_version": "10.11.19-MariaDB",
        "cpu_count": 8,
        "memory_bytes": 32 * 2**30,
    }
    facts.update(overrides)
    return facts


def workload_profile(**overrides: Any) -> dict[str, Any]:
    profile: dict[str, Any] = {
        "window_s": 60.0,
        "connections": 200,
        "active_connections": 40.0,
        "qps": 12000.0,
        "tps": 800.0,
        "read_fraction": 0.8,
        "latency_ms": 1.6,
        "cpu_ms_per_request": 0.4,
        "wait_ms_per_request": 1.2,
    }
    profile.update(overrides)
    return profile


def climb_report(host: dict[str, Any] | None = None, **overrides: Any) -> dict[str, Any]:
    """A valid ClimbReport payload (JSON-ready dict) for ``host``."""
    host = host or host_facts()
    engine = host["engine"]
    samples = overrides.pop("trace_samples", 5)
    report: dict[str, Any] = {
        "schema_version": 1,
        "idempotency_key": str(uuid.uuid4()),
        "host": host,
        "profile": workload_profile(),
        "start_tuple": {"engine": engine, "values": {"thread_pool_size": 8}},
        "start_source": "heuristic",
        "optimal_tuple": {"engine": engine, "values": {"thread_pool_size": 12}},
        "default_tuple": {"engine": engine, "values": {"thread_pool_size": 8}},
        "throughput_start": 10000.0,
        "throughput_optimal": 12500.0,
        "throughput_default": 10000.0,
        "converged": True,
        "samples_to_converge": samples,
        "trace": [
            {
                "t_s": 2.0 * i,
                "knobs": {"thread_pool_size": 1 + (7 + i) % 64},
                "throughput": 10000.0 + 100 * i,
                "latency_ms": 1.5,
                "connections": 200,
                "state": "USUAL",
            }
            for i in range(samples)
        ],
        "climber": {"name": "pooltune", "version": "1", "settings": {"wave_period": 4}},
        "started_at": STARTED.isoformat(),
        "finished_at": (STARTED + timedelta(seconds=2 * samples)).isoformat(),
    }
    report.update(overrides)
    return report


def recommendation_request(
    host: dict[str, Any] | None = None, **profile_overrides: Any
) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "host": host or host_facts(),
        "profile": workload_profile(**profile_overrides),
    }


def create_host(session: Session, **overrides: Any) -> Host:
    facts = host_facts(**overrides)
    host = Host(
        hostname=facts["hostname"],
        engine=facts["engine"],
        engine_version=facts["engine_version"],
        cpu_count=facts["cpu_count"],
        memory_bytes=facts["memory_bytes"],
    )
    session.add(host)
    session.flush()
    return host


def create_enrollment_token(
    session: Session,
    *,
    max_uses: int = 1,
    ttl_hours: float = 1.0,
    description: str = "test",
    hostname: str | None = None,
) -> tuple[EnrollmentToken, str]:
    return auth_service.create_enrollment_token(
        session,
        description=description,
        max_uses=max_uses,
        ttl_hours=ttl_hours,
        hostname=hostname,
    )


def create_agent(session: Session, **host_overrides: Any) -> tuple[Agent, str, HostFacts]:
    """Enrol an agent for a new host: (agent, agent token, host facts)."""
    _, enrollment = create_enrollment_token(session)
    facts = HostFacts.model_validate(host_facts(**host_overrides))
    agent, token = auth_service.enroll_agent(session, enrollment_token=enrollment, host=facts)
    return agent, token, facts


def create_report(session: Session, agent: Agent, facts: HostFacts, **overrides: Any) -> Report:
    payload = ClimbReport.model_validate(climb_report(facts.model_dump(mode="json"), **overrides))
    result = report_service.ingest_report(
        session, payload, agent_id=agent.id, agent_host_id=agent.host_id
    )
    return result.report


def create_model_version(
    session: Session,
    *,
    engine: Engine = Engine.MARIADB,
    name: str = "const",
    values: dict[str, int] | None = None,
    metrics: dict[str, Any] | None = None,
    promote: bool = False,
) -> ModelVersion:
    predictor = LinearPredictor.constant(engine, values or {"thread_pool_size": 5})
    version = registry_service.register_version(
        session,
        engine=engine,
        name=name,
        artifact=dump_predictor(predictor),
        metrics=metrics if metrics is not None else {"regret": 0.1},
        training_summary={"reports": 10},
    )
    if promote:
        registry_service.promote_version(session, version.id, reason="test", forced=True)
    return version


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def profile_model(**overrides: Any) -> WorkloadProfile:
    return WorkloadProfile.model_validate(workload_profile(**overrides))
