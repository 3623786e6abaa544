"""The Approvals page: pending requests with their forms, and the decisions taken."""

from __future__ import annotations

import math
from typing import Annotated

from fastapi import APIRouter, Path, Query
from fastapi.responses import HTMLResponse, RedirectResponse

from agents.knobs import catalog
from service.approvals import service as approval_service
from service.approvals.models import ApprovalState
from service.console import queries
from service.console.context import page_context
from service.console.dependencies import AdminDep, CheckedFormDep, ConsolePageError
from service.console.templating import render
from service.db import SessionDep, utcnow
from service.errors import PooltuneError

router = APIRouter(prefix="/console", include_in_schema=False)

PER_PAGE = 25
ApprovalId = Annotated[int, Path(ge=1, le=2**63 - 1)]


@router.get("/approvals")
def approvals(
    session: SessionDep,
    admin: AdminDep,
    state: Annotated[ApprovalState | None, Query()] = ApprovalState.PENDING,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
) -> HTMLResponse:
    items, total = approval_service.list_approvals(
        session, state=state, host_id=None, limit=PER_PAGE, offset=(page - 1) * PER_PAGE
    )
    names = queries.hostnames(session, sorted({item.host_id for item in items}))
    return render(
        "approvals.html",
        page_context(
            session,
            admin,
            "approvals",
            items=items,
            names=names,
            catalogs={item.engine: catalog(item.engine) for item in items},
            predicted_gain=approval_service.predicted_gain,
            state=state.value if state else "",
            states=[s.value for s in ApprovalState],
            total=total,
            page=page,
            pages=max(1, math.ceil(total / PER_PAGE)),
            now=utcnow(),
        ),
    )


def _back(form: dict[str, str]) -> RedirectResponse:
    back = form.get("back", "")
    if not back.startswith("/console/") or "//" in back:
        back = "/console/approvals"
    return RedirectResponse(back, status_code=303)


def _edited_values(form: dict[str, str]) -> dict[str, int]:
    """The knob fields of the approval form (``knob:<name>``), as integers."""
    values: dict[str, int] = {}
    for field, raw in form.items():
        if not field.startswith("knob:") or not raw.strip():
            continue
        name = field.removeprefix("knob:")
        try:
            values[name] = int(raw.strip())
        except ValueError:
            raise ConsolePageError(
                422, "Not approved", f"{name}: {raw!r} is not a whole number"
            ) from None
    return values


@router.post("/approvals/{approval_id}/approve")
def approve(
    session: SessionDep, _admin: AdminDep, form: CheckedFormDep, approval_id: ApprovalId
) -> RedirectResponse:
    try:
        approval_service.approve(
            session,
            approval_id,
            values=_edited_values(form) or None,
            reason=form.get("reason", "")[:2000],
            actor="console",
        )
    except PooltuneError as exc:
        raise ConsolePageError(exc.status_code, "Not approved", str(exc.detail)) from exc
    return _back(form)


@router.post("/approvals/{approval_id}/reject")
def reject(
    session: SessionDep, _admin: AdminDep, form: CheckedFormDep, approval_id: ApprovalId
) -> RedirectResponse:
    try:
        approval_service.reject(
            session, approval_id, reason=form.get("reason", "")[:2000], actor="console"
        )
    except PooltuneError as exc:
        raise ConsolePageError(exc.status_code, "Not rejected", str(exc.detail)) from exc
    return _back(form)
