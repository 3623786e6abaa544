"""Hosts: created at enrolment, kept current by report ingest."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from agents.wire import HostFacts
from service.errors import ForbiddenError, NotFoundError
from service.hosts.models import Host
from service.hosts.repository import HostRepository


def upsert_host(session: Session, facts: HostFacts) -> Host:
    """The host row for ``facts`` (hostname, engine), created or refreshed; safe under races."""
    host, _ = enroll_host(session, facts)
    return host


def enroll_host(session: Session, facts: HostFacts) -> tuple[Host, bool]:
    """The host row for ``facts`` and whether this call created it (refreshed otherwise).

    ``INSERT ... ON CONFLICT DO NOTHING`` decides: of two concurrent enrolments of one new
    host, exactly one sees it created.
    """
    repository = HostRepository(session)
    new_id = repository.insert_if_absent(
        hostname=facts.hostname,
        engine=facts.engine.value,
        engine_version=facts.engine_version,
        cpu_count=facts.cpu_count,
        memory_bytes=facts.memory_bytes,
    )
    host = repository.get_by_identity(facts.hostname, facts.engine.value)
    assert host is not None  # inserted above or by a concurrent request
    if (host.engine_version, host.cpu_count, host.memory_bytes) != (
        facts.engine_version,
        facts.cpu_count,
        facts.memory_bytes,
    ):
        host.engine_version = facts.engine_version
        host.cpu_count = facts.cpu_count
        host.memory_bytes = facts.memory_bytes
        session.flush()
    return host, new_id is not None


def get_host(session: Session, host_id: int) -> Host:
    host = HostRepository(session).get(host_id)
    if host is None:
        raise NotFoundError(f"no host with id {host_id}")
    return host


def require_own_host(session: Session, host_id: int, facts: HostFacts) -> Host:
    """The agent's host, if ``facts`` name it; 403 otherwise (an agent speaks for its host)."""
    host = get_host(session, host_id)
    check_own_host(host.hostname, host.engine, facts)
    return host


def check_own_host(hostname: str, engine: str, facts: HostFacts) -> None:
    """403 unless ``facts`` name the agent's host (its hostname and engine as enrolled)."""
    if (facts.hostname, facts.engine.value) != (hostname, engine):
        raise ForbiddenError(
            f"this agent speaks for {hostname} ({engine}), not for "
            f"{facts.hostname} ({facts.engine.value})"
        )


def list_hosts(
    session: Session, *, engine: str | None, limit: int, offset: int
) -> tuple[Sequence[Host], int]:
    return HostRepository(session).paginate(engine=engine, limit=limit, offset=offset)
