from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Update, and_, func, or_, select, update
from sqlalchemy.orm import Session

from service.db import insert_ignoring_conflict, utcnow
from service.hosts.models import Host


class HostRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def get(self, host_id: int) -> Host | None:
        return self.session.get(Host, host_id)

    def get_by_identity(self, hostname: str, engine: str) -> Host | None:
        return self.session.scalars(
            select(Host).where(Host.hostname == hostname, Host.engine == engine)
        ).one_or_none()

    def insert_if_absent(
        self, *, hostname: str, engine: str, engine_version: str, cpu_count: int, memory_bytes: int
    ) -> int | None:
        now = utcnow()
        new_id: int | None = insert_ignoring_conflict(
            self.session,
            Host.__table__,
            {
                "hostname": hostname,
                "engine": engine,
                "engine_version": engine_version,
                "cpu_count": cpu_count,
                "memory_bytes": memory_bytes,
                "created_at": now,
                "updated_at": now,
            },
            conflict_columns=["hostname", "engine"],
        )
        return new_id

    def paginate(
        self, *, engine: str | None, limit: int, offset: int
    ) -> tuple[Sequence[Host], int]:
        query = select(Host)
        if engine is not None:
            query = query.where(Host.engine == engine)
        total = self.session.scalar(select(func.count()).select_from(query.subquery())) or 0
        items = self.session.scalars(query.order_by(Host.id.desc()).limit(limit).offset(offset))
        return items.all(), total


def record_if_newest_statement(
    host_id: Any,
    *,
    report_id: Any,
    finished_at: Any,
    values: dict[str, Any],
    updated_at: Any = None,
) -> Update:
    """``UPDATE hosts`` with ``values`` and the last report, only if this report is the
    newest of the host.

    Newest: the latest ``finished_at``, ties going to the higher report id (the order of
    ``latest_for_host``). One conditional UPDATE: PostgreSQL re-checks the condition on the
    row after waiting for a concurrent writer, so the newest report wins whatever the order
    of arrival. Any argument may be a SQL expression (a bound parameter, or for
    ``report_id`` the id an INSERT in the same statement returns).
    """
    newer = or_(
        Host.last_report_at.is_(None),
        Host.last_report_at < finished_at,
        and_(
            Host.last_report_at == finished_at,
            or_(Host.last_report_id.is_(None), Host.last_report_id < report_id),
        ),
    )
    return (
        update(Host)
        .where(Host.id == host_id, newer)
        .values(
            **values,
            last_report_id=report_id,
            last_report_at=finished_at,
            updated_at=utcnow() if updated_at is None else updated_at,
        )
        .execution_options(synchronize_session=False)
    )
