"""Report ingest (idempotent on the report's key) and report queries."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy.orm import Session

from agents.wire import ClimbReport, TraceSample
from service.db import utcnow
from service.errors import ConflictError, NotFoundError
from service.hosts import service as host_service
from service.reports.models import Report
from service.reports.repository import ReportRepository
from service.reports.schemas import ReportRead, ReportSummary
from service.reports.trace_codec import TraceDecodeError, decode_trace, encode_trace
from service.stored_json import note_damage, tuple_values


@dataclass(frozen=True, slots=True)
class IngestResult:
    report: Report
    created: bool


def payload_sha256(report: ClimbReport) -> str:
    return hashlib.sha256(report.model_dump_json().encode()).hexdigest()


def ingest_report(
    session: Session, report: ClimbReport, *, agent_id: int | None, agent_host_id: int
) -> IngestResult:
    """Store ``report`` once. A retry (same key, same payload) returns the stored row.

    ``agent_id`` is None for reports that did not come from an agent (dataset imports).

    The unique key plus ``INSERT ... ON CONFLICT DO NOTHING`` makes concurrent duplicates
    safe: exactly one insert wins, the others read the winner's row.
    """
    host = host_service.require_own_host(session, agent_host_id, report.host)
    repository = ReportRepository(session)
    digest = payload_sha256(report)

    existing = repository.get_by_key(report.idempotency_key)
    if existing is None:
        new_id = repository.insert_if_new(
            _row_values(report, digest=digest, host_id=host.id, agent_id=agent_id)
        )
        if new_id is not None:
            stored = repository.get(new_id)
            assert stored is not None
            host_service.record_report(
                session,
                host,
                report_id=stored.id,
                facts=report.host,
                optimal_tuple=report.optimal_tuple,
                finished_at=report.finished_at,
            )
            return IngestResult(stored, created=True)
        existing = repository.get_by_key(report.idempotency_key)
        assert existing is not None  # the conflicting insert has committed
    if existing.payload_sha256 != digest or existing.host_id != host.id:
        raise ConflictError(
            f"idempotency_key {report.idempotency_key!r} was already used for a different "
            "report; use a new key per climb"
        )
    return IngestResult(existing, created=False)


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


def summarize(report: Report) -> ReportSummary:
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
