from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row, func, select
from sqlalchemy.orm import Session

from service.db import insert_ignoring_conflict
from service.reports.models import Report

#: id, host_id, host_facts, profile, optimal_tuple, climber, trace (encoded).
ExampleColumns = tuple[
    int, int, dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any], bytes
]


class ReportRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def get(self, report_id: int) -> Report | None:
        return self.session.get(Report, report_id)

    def get_by_key(self, idempotency_key: str) -> Report | None:
        return self.session.scalars(
            select(Report).where(Report.idempotency_key == idempotency_key)
        ).one_or_none()

    def insert_if_new(self, values: dict[str, Any]) -> int | None:
        """The new report's id, or None when the idempotency key is already stored."""
        new_id: int | None = insert_ignoring_conflict(
            self.session, Report.__table__, values, conflict_columns=["idempotency_key"]
        )
        return new_id

    def latest_for_host(self, host_id: int) -> Report | None:
        return self.session.scalars(
            select(Report)
            .where(Report.host_id == host_id)
            .order_by(Report.finished_at.desc(), Report.id.desc())
            .limit(1)
        ).first()

    def paginate(
        self,
        *,
        host_id: int | None,
        engine: str | None,
        since: datetime | None,
        until: datetime | None,
        converged: bool | None,
        limit: int,
        offset: int,
    ) -> tuple[Sequence[Report], int]:
        query = select(Report)
        if host_id is not None:
            query = query.where(Report.host_id == host_id)
        if engine is not None:
            query = query.where(Report.engine == engine)
        if since is not None:
            query = query.where(Report.finished_at >= since)
        if until is not None:
            query = query.where(Report.finished_at < until)
        if converged is not None:
            query = query.where(Report.converged == converged)
        total = self.session.scalar(select(func.count()).select_from(query.subquery())) or 0
        items = self.session.scalars(query.order_by(Report.id.desc()).limit(limit).offset(offset))
        return items.all(), total

    def stream_converged(
        self, engine: str, *, batch_size: int = 2000, limit: int | None = None
    ) -> Iterator[Row[ExampleColumns]]:
        """Converged reports of ``engine``, oldest first: the columns a training example
        needs, streamed in batches (server-side cursor), not ORM objects, so a million
        reports cost one batch of memory."""
        statement = (
            select(
                Report.id,
                Report.host_id,
                Report.host_facts,
                Report.profile,
                Report.optimal_tuple,
                Report.climber,
                Report.trace,
            )
            .where(Report.engine == engine, Report.converged.is_(True))
            .order_by(Report.id)
            .execution_options(yield_per=batch_size, stream_results=True)
        )
        if limit is not None:
            statement = statement.limit(limit)
        yield from self.session.execute(statement)
