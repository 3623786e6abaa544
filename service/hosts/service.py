"""Hosts: created at enrolment, kept current by report ingest."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.orm import Session

from agents.wire import HostFacts, KnobTuple
from service.errors import NotFoundError
from service.hosts.models import Host
from service.hosts.repository import HostRepository


def upsert_host(session: Session, facts: HostFacts) -> Host:
    """The host row for ``facts`` (hostname, engine), created or refreshed; safe under races."""
    repository = HostRepository(session)
    repository.insert_if_absent(
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
    return host


def get_host(session: Session, host_id: int) -> Host:
    host = HostRepository(session).get(host_id)
    if host is None:
        raise NotFoundError(f"no host with id {host_id}")
    return host


def list_hosts(
    session: Session, *, engine: str | None, limit: int, offset: int
) -> tuple[Sequence[Host], int]:
    return HostRepository(session).paginate(engine=engine, limit=limit, offset=offset)


def record_report(
    host: Host, *, report_id: int, optimal_tuple: KnobTuple, finished_at: datetime
) -> None:
    """Make the host's current tuple the newest report's optimum (by climb end time)."""
    if host.last_report_at is not None and host.last_report_at > finished_at:
        return
    host.current_tuple = dict(optimal_tuple.values)
    host.last_report_id = report_id
    host.last_report_at = finished_at


def refresh_facts(host: Host, facts: HostFacts) -> None:
    """Keep version, CPU count and memory current (they change with upgrades and resizes)."""
    if host.engine_version != facts.engine_version:
        host.engine_version = facts.engine_version
    if host.cpu_count != facts.cpu_count:
        host.cpu_count = facts.cpu_count
    if host.memory_bytes != facts.memory_bytes:
        host.memory_bytes = facts.memory_bytes
