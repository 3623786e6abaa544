"""Report ingest (idempotent on the report's key) and report queries."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from agents.wire import ClimbReport, TraceSample
from service.auth.service import Principal
from service.db import utcnow
from service.errors import ConflictError, NotFoundError
from service.hosts import service as host_service
from service.hot_db import HotDB
from service.reports.models import Report
from service.reports.repository import (
    ReportRepository,
    SummaryRow,
    insert_report,
    summary_by_key,
)
from service.reports.schemas import ReportRead, ReportSummary
from service.reports.trace_codec import TraceDecodeError, decode_trace, encode_trace
from service.stored_json import note_damage, tuple_values


@dataclass(frozen=True, slots=True)
class IngestResult:
    report: Report
    created: bool


@dataclass(frozen=True, slots=True)
class IngestedRow:
    """The stored report's summary columns (:data:`SUMMARY_COLUMNS`) and whether this
    upload created it."""

    row: SummaryRow
    created: bool


def payload_sha256(report: ClimbReport) -> str:
    return hashlib.sha256(report.model_dump_json().encode()).hexdigest()


def store_report(
    connection: Connection | Session, report: ClimbReport, *, agent_id: int | None, host_id: int
) -> IngestedRow:
    """Store ``report`` once for the host ``host_id`` (checked by the caller); a retry (same
    key, same payload) returns the stored row; the same key with another payload is a 409.

    The unique key plus ``INSERT ... ON CONFLICT DO NOTHING`` makes concurrent duplicates
    safe: exactly one insert wins, the others read the winner's row. The host takes the
    newest report's optimum and facts in the same statement (PostgreSQL).
    """
    digest = payload_sha256(report)
    values = _row_values(report, digest=digest, host_id=host_id, agent_id=agent_id)
    host_values = {
        "current_tuple": dict(report.optimal_tuple.values),
        "engine_version": report.host.engine_version,
        "cpu_count": report.host.cpu_count,
        "memory_bytes": report.host.memory_bytes,
    }
    row, created = insert_report(connection, values, host_values=host_values)
    if row is None:
        # The key was inserted by a concurrent upload that committed meanwhile.
        row = summary_by_key(connection, report.idempotency_key)
        assert row is not None
    if not created and (row.payload_sha256 != digest or row.host_id != host_id):
        raise ConflictError(
            f"idempotency_key {report.idempotency_key!r} was already used for a different "
            "report; use a new key per climb"
        )
    return IngestedRow(row, created)


def ingest_report(
    session: Session, report: ClimbReport, *, agent_id: int | None, agent_host_id: int
) -> IngestResult:
    """:func:`store_report` in the session's transaction, for a host the report must name
    (403 otherwise); the stored report as an ORM object (imports, tests).

    ``agent_id`` is None for reports that did not come from an agent (dataset imports).
    """
    host = host_service.require_own_host(session, agent_host_id, report.host)
    stored = store_report(session, report, agent_id=agent_id, host_id=host.id)
    session.expire(host)  # the statement may have updated the host's row
    orm_report = session.get(Report, stored.row.id)
    assert orm_report is not None
    return IngestResult(orm_report, stored.created)


async def ingest_report_hot(
    hot_db: HotDB, report: ClimbReport, *, principal: Principal
) -> IngestedRow:
    """:func:`store_report` for the hot route: the host checked against the token's host
    (no query), then one statement on PostgreSQL."""
    assert principal.host_id is not None
    assert principal.hostname is not None and principal.engine is not None
    host_service.check_own_host(principal.hostname, principal.engine, report.host)
    host_id, agent_id = principal.host_id, principal.agent_id
    return await hot_db.run(lambda c: store_report(c, report, agent_id=agent_id, host_id=host_id))


def _row_values(
    report: ClimbReport, *, digest: str, host_id: int, agent_id: int | None
) -> dict[str, Any]:
    return {
        "idempotency_key": report.idempotency_key,
        "payload_sha256": digest,
        "host_id": host_id,
        "agent_id": agent_id,
        "engine": report.host.engine.value,
        "schema_version": report.schema_version,
        "received_at": utcnow(),
        "started_at": report.started_at,
        "finished_at": report.finished_at,
        "converged": report.converged,
        "samples_to_converge": report.samples_to_converge,
        "start_source": report.start_source.value,
        "start_model_version": report.start_model_version,
        "host_facts": report.host.model_dump(mode="json"),
        "profile": report.profile.model_dump(mode="json"),
        "start_tuple": report.start_tuple.model_dump(mode="json"),
        "optimal_tuple": report.optimal_tuple.model_dump(mode="json"),
        "default_tuple": (
            report.default_tuple.model_dump(mode="json") if report.default_tuple else None
        ),
        "throughput_start": report.throughput_start,
        "throughput_optimal": report.throughput_optimal,
        "throughput_default": report.throughput_default,
        "climber": report.climber.model_dump(mode="json"),
        "trace_samples": len(report.trace),
        "trace": encode_trace(report.trace),
    }


def summarize(report: Report | SummaryRow) -> ReportSummary:
    """The report's summary; stored JSON that does not read is listed in ``damaged``."""
    damaged: list[str] = []
    row = f"reports/{report.id}"
    return ReportSummary(
        id=report.id,
        idempotency_key=report.idempotency_key,
        host_id=report.host_id,
        engine=report.engine,
        received_at=report.received_at,
        started_at=report.started_at,
        finished_at=report.finished_at,
        converged=report.converged,
        samples_to_converge=report.samples_to_converge,
        start_source=report.start_source,
        start_model_version=report.start_model_version,
        start_tuple=tuple_values(report.start_tuple, "start_tuple", damaged, row=row),
        optimal_tuple=tuple_values(report.optimal_tuple, "optimal_tuple", damaged, row=row),
        throughput_start=report.throughput_start,
        throughput_optimal=report.throughput_optimal,
        throughput_default=report.throughput_default,
        trace_samples=report.trace_samples,
        damaged=damaged,
    )


def to_climb_report(report: Report, trace: list[TraceSample]) -> ClimbReport:
    """The uploaded payload, rebuilt from its columns and the decoded trace."""
    return ClimbReport.model_validate(
        {
            "schema_version": report.schema_version,
            "idempotency_key": report.idempotency_key,
            "host": report.host_facts,
            "profile": report.profile,
            "start_tuple": report.start_tuple,
            "start_source": report.start_source,
            "start_model_version": report.start_model_version,
            "optimal_tuple": report.optimal_tuple,
            "default_tuple": report.default_tuple,
            "throughput_start": report.throughput_start,
            "throughput_optimal": report.throughput_optimal,
            "throughput_default": report.throughput_default,
            "converged": report.converged,
            "samples_to_converge": report.samples_to_converge,
            "trace": trace,
            "climber": report.climber,
            "started_at": report.started_at,
            "finished_at": report.finished_at,
        }
    )


def read_report(session: Session, report_id: int) -> ReportRead:
    report = ReportRepository(session).get(report_id)
    if report is None:
        raise NotFoundError(f"no report with id {report_id}")
    summary = summarize(report)
    row = f"reports/{report.id}"
    trace: list[TraceSample] = []
    try:
        trace = decode_trace(report.trace)
    except TraceDecodeError as exc:
        note_damage(summary.damaged, "trace", f"does not decode ({exc}); shown empty", row=row)
    payload: ClimbReport | None = None
    try:
        payload = to_climb_report(report, trace)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        note_damage(
            summary.damaged, "report", f"not a valid report ({where}: {first['msg']})", row=row
        )
    return ReportRead(**summary.model_dump(), report=payload)


def list_reports(
    session: Session,
    *,
    host_id: int | None,
    engine: str | None,
    since: datetime | None,
    until: datetime | None,
    converged: bool | None,
    limit: int,
    offset: int,
) -> tuple[Sequence[Report], int]:
    return ReportRepository(session).paginate(
        host_id=host_id,
        engine=engine,
        since=since,
        until=until,
        converged=converged,
        limit=limit,
        offset=offset,
    )


def latest_report(session: Session, host_id: int) -> Report | None:
    return ReportRepository(session).latest_for_host(host_id)


def gain_over_default(report: Report) -> float | None:
    if report.throughput_default is None or report.throughput_default <= 0:
        return None
    return report.throughput_optimal / report.throughput_default - 1.0


def prune_reports(
    session_factory: Callable[[], Session], *, older_than: datetime, batch_size: int = 5000
) -> int:
    """Delete the reports received before ``older_than``, except each host's newest (the
    host's state names it), a batch per transaction so that no lock is held for long and a
    replica's ingest is never blocked behind it; how many were deleted. Safe to run from
    several places at once (each batch deletes what is still there)."""
    deleted = 0
    while True:
        with session_factory() as session, session.begin():
            count = ReportRepository(session).delete_received_before(
                older_than, batch_size=batch_size
            )
        deleted += count
        if count < batch_size:
            return deleted
