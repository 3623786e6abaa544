from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from service.approvals.models import Approval, ApprovalState
from service.db import insert_ignoring_conflict


class ApprovalRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def get(self, approval_id: int, *, for_update: bool = False) -> Approval | None:
        # populate_existing: an expiry UPDATE may have changed the row behind the identity map.
        query = (
            select(Approval)
            .where(Approval.id == approval_id)
            .execution_options(populate_existing=True)
        )
        if for_update:
            query = query.with_for_update()
        return self.session.scalars(query).one_or_none()

    def get_by_key(self, idempotency_key: str) -> Approval | None:
        return self.session.scalars(
            select(Approval).where(Approval.idempotency_key == idempotency_key)
        ).one_or_none()

    def insert_if_new(self, values: dict[str, Any]) -> int | None:
        """The new row's id, or None when the idempotency key is already stored."""
        new_id: int | None = insert_ignoring_conflict(
            self.session, Approval.__table__, values, conflict_columns=["idempotency_key"]
        )
        return new_id

    def supersede_pending(self, host_id: int, *, except_id: int, now: datetime) -> int:
        """Mark the host's other pending requests superseded; returns how many."""
        result = self.session.execute(
            update(Approval)
            .where(
                Approval.host_id == host_id,
                Approval.state == ApprovalState.PENDING.value,
                Approval.id != except_id,
            )
            .values(state=ApprovalState.SUPERSEDED.value, decided_at=now, decided_by="agent")
            .execution_options(synchronize_session=False)
        )
        return int(getattr(result, "rowcount", 0) or 0)

    def expire_due(self, now: datetime) -> int:
        """Pending requests past their deadline become expired (one indexed UPDATE)."""
        result = self.session.execute(
            update(Approval)
            .where(Approval.state == ApprovalState.PENDING.value, Approval.expires_at <= now)
            .values(
                state=ApprovalState.EXPIRED.value,
                decided_at=Approval.expires_at,
                decided_by="expiry",
            )
            .execution_options(synchronize_session=False)
        )
        return int(getattr(result, "rowcount", 0) or 0)

    def paginate(
        self, *, state: str | None, host_id: int | None, limit: int, offset: int
    ) -> tuple[Sequence[Approval], int]:
        query = select(Approval)
        if state is not None:
            query = query.where(Approval.state == state)
        if host_id is not None:
            query = query.where(Approval.host_id == host_id)
        total = self.session.scalar(select(func.count()).select_from(query.subquery())) or 0
        items = self.session.scalars(query.order_by(Approval.id.desc()).limit(limit).offset(offset))
        return items.all(), total

    def latest_per_host(self, host_ids: Sequence[int]) -> dict[int, Approval]:
        """The newest request of each host in ``host_ids`` (the fleet page's phase)."""
        if not host_ids:
            return {}
        newest = (
            select(func.max(Approval.id))
            .where(Approval.host_id.in_(host_ids))
            .group_by(Approval.host_id)
        )
        rows = self.session.scalars(select(Approval).where(Approval.id.in_(newest)))
        return {row.host_id: row for row in rows}
