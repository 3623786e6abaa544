from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import (
    CompoundSelect,
    Row,
    Table,
    bindparam,
    delete,
    false,
    func,
    literal_column,
    select,
    true,
)
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from service.db import UTCDateTime, dialect_name, insert_ignoring_conflict, utcnow
from service.hosts.models import Host
from service.hosts.repository import record_if_newest_statement
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

    def delete_received_before(self, cutoff: datetime, *, batch_size: int) -> int:
        """Delete up to ``batch_size`` reports received before ``cutoff`` that no host names
        as its last report (its state came from it); how many were deleted."""
        still_named = select(Host.id).where(Host.last_report_id == Report.id).exists()
        doomed = (
            select(Report.id)
            .where(Report.received_at < cutoff, ~still_named)
            .order_by(Report.received_at)
            .limit(batch_size)
        )
        result = self.session.execute(
            delete(Report)
            .where(Report.id.in_(doomed.scalar_subquery()))
            .execution_options(synchronize_session=False)
        )
        return int(getattr(result, "rowcount", 0) or 0)

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


#: A row of SUMMARY_COLUMNS, read by attribute like a Report (SQLAlchemy types a Row by
#: its columns' types, eighteen here; Any keeps the signatures readable).
SummaryRow = Any

#: What an upload answers (the summary), and what tells a retry from a reused key.
SUMMARY_COLUMNS = (
    Report.id,
    Report.idempotency_key,
    Report.host_id,
    Report.engine,
    Report.received_at,
    Report.started_at,
    Report.finished_at,
    Report.converged,
    Report.samples_to_converge,
    Report.start_source,
    Report.start_model_version,
    Report.start_tuple,
    Report.optimal_tuple,
    Report.throughput_start,
    Report.throughput_optimal,
    Report.throughput_default,
    Report.trace_samples,
    Report.payload_sha256,
)


def summary_by_key(connection: Connection | Session, idempotency_key: str) -> SummaryRow | None:
    return connection.execute(
        select(*SUMMARY_COLUMNS).where(Report.idempotency_key == idempotency_key)
    ).one_or_none()


def insert_report(
    connection: Connection | Session,
    values: dict[str, Any],
    *,
    host_values: dict[str, Any],
) -> tuple[SummaryRow | None, bool]:
    """Store a report once, keyed by its idempotency key, and make it the host's state if it
    is the host's newest: (the stored summary row, whether this call created it).

    PostgreSQL: one statement, so one round trip and atomic without a transaction —
    ``INSERT … ON CONFLICT DO NOTHING RETURNING`` and the host's conditional UPDATE as CTEs,
    and the existing row when the key was already there. A concurrent insert of the same key
    that commits while this statement runs is not in its snapshot: the summary row is then
    None, and the caller reads it again. Elsewhere (SQLite), the same steps one by one in
    the caller's transaction.
    """
    if dialect_name(connection) == "postgresql":
        return _insert_report_postgresql(connection, values, host_values=host_values)
    new_id = insert_ignoring_conflict(
        connection, Report.__table__, values, conflict_columns=["idempotency_key"]
    )
    if new_id is not None:
        connection.execute(
            record_if_newest_statement(
                values["host_id"],
                report_id=new_id,
                finished_at=values["finished_at"],
                values=host_values,
            )
        )
    return summary_by_key(connection, values["idempotency_key"]), new_id is not None


def _insert_report_postgresql(
    connection: Connection | Session, values: dict[str, Any], *, host_values: dict[str, Any]
) -> tuple[SummaryRow | None, bool]:
    statement = _insert_report_statement(tuple(values), tuple(host_values))
    parameters = {
        **{f"r_{name}": value for name, value in values.items()},
        **{f"h_{name}": value for name, value in host_values.items()},
        "h_updated_at": utcnow(),
    }
    row = connection.execute(statement, parameters).one_or_none()
    if row is None:
        return None, False
    return row, bool(row.created)


@functools.cache
def _insert_report_statement(
    columns: tuple[str, ...], host_columns: tuple[str, ...]
) -> CompoundSelect[Any]:
    """The PostgreSQL ingest statement, built once: every value a bound parameter (the
    report's columns prefixed ``r_``, the host's ``h_``: a parameter named like a column
    would add that column to the INSERT or the UPDATE), so a request neither builds nor
    compiles SQL (SQLAlchemy's compiled cache keys on this one object)."""
    from sqlalchemy.dialects.postgresql import insert as pg_insert

    table = cast(Table, Report.__table__)
    inserted = (
        pg_insert(table)
        .values({name: bindparam(f"r_{name}") for name in columns})
        .on_conflict_do_nothing(index_elements=["idempotency_key"])
        .returning(*SUMMARY_COLUMNS)
        .cte("inserted")
    )
    host_update = (
        record_if_newest_statement(
            bindparam("r_host_id"),
            report_id=inserted.c.id,
            finished_at=bindparam("r_finished_at", type_=UTCDateTime()),
            values={name: bindparam(f"h_{name}") for name in host_columns},
            updated_at=bindparam("h_updated_at", type_=UTCDateTime()),
        )
        .returning(literal_column("1"))
        .cte("host_update")
    )
    created = select(*inserted.c, true().label("created"))
    existing = select(*SUMMARY_COLUMNS, false().label("created")).where(
        Report.idempotency_key == bindparam("r_idempotency_key"),
        ~select(inserted.c.id).exists(),
    )
    return created.union_all(existing).add_cte(host_update)
