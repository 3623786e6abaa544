"""What every signed-in page's template receives: the admin's CSRF token and the nav."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from service.console.dependencies import ConsoleAdmin
from service.console.queries import pending_approvals


def page_context(session: Session, admin: ConsoleAdmin, nav: str, **values: Any) -> dict[str, Any]:
    return {
        "admin": admin,
        "csrf": admin.csrf_token,
        "nav": nav,
        "pending_total": pending_approvals(session),
        **values,
    }
