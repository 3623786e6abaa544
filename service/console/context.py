"""What every signed-in page's template receives: the admin's CSRF token and the nav."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.approvals.models import Approval, ApprovalState
from service.console.dependencies import ConsoleAdmin


def page_context(session: Session, admin: ConsoleAdmin, nav: str, **values: Any) -> dict[str, Any]:
    pending = (
        session.scalar(
            select(func.count())
            .select_from(Approval)
            .where(Approval.state == ApprovalState.PENDING.value)
        )
        or 0
    )
    return {
        "admin": admin,
        "csrf": admin.csrf_token,
        "nav": nav,
        "pending_total": pending,
        **values,
    }
