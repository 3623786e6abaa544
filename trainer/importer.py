"""Store reports that did not come from an agent (datasets) through the service's own ingest,
so the trainer has one data path whatever the data's origin."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sqlalchemy.orm import Session

from agents.wire import ClimbReport
from service.hosts import service as host_service
from service.reports import service as report_service


def import_reports(
    session: Session,
    reports: Iterable[ClimbReport],
    *,
    on_report: Callable[[], None] | None = None,
    flush_every: int = 500,
) -> tuple[int, int]:
    """Ingest ``reports`` idempotently (by their key); returns (created, already there)."""
    created = existing = 0
    for index, report in enumerate(reports):
        host = host_service.upsert_host(session, report.host)
        result = report_service.ingest_report(session, report, agent_id=None, agent_host_id=host.id)
        created += result.created
        existing += not result.created
        if on_report is not None:
            on_report()
        if index % flush_every == flush_every - 1:
            # Keep the identity map small on big imports: nothing is needed again.
            session.flush()
            session.expunge_all()
    return created, existing
