"""The Models page (versions per engine, the audit log), the model card, promote / demote."""

from __future__ import annotations

import math
from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from agents.knobs import Engine
from service.console import queries, views
from service.console.context import page_context
from service.console.dependencies import AdminDep, CheckedFormDep, ConsolePageError
from service.console.templating import render
from service.db import SessionDep
from service.errors import PooltuneError
from service.registry import service as registry_service
from service.registry.models import ModelVersion
from service.registry.repository import RegistryRepository

router = APIRouter(prefix="/console/models", include_in_schema=False)

PER_PAGE = 50
AUDIT_PER_PAGE = 20
VersionId = Annotated[int, Path(ge=1, le=2**31 - 1)]
Action = Literal["promote", "demote"]


@router.get("")
def models(
    session: SessionDep,
    admin: AdminDep,
    engine: Annotated[Engine | None, Query()] = None,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    audit_page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
) -> HTMLResponse:
    versions, total = queries.model_versions(
        session,
        engine=engine.value if engine else None,
        limit=PER_PAGE,
        offset=(page - 1) * PER_PAGE,
    )
    audit, audit_total = queries.promotion_audit(
        session, version_id=None, limit=AUDIT_PER_PAGE, offset=(audit_page - 1) * AUDIT_PER_PAGE
    )
    return render(
        "models.html",
        page_context(
            session,
            admin,
            "models",
            versions=versions,
            total=total,
            page=page,
            pages=max(1, math.ceil(total / PER_PAGE)),
            engine=engine.value if engine else "",
            engines=[e.value for e in Engine],
            audit=audit,
            audit_page=audit_page,
            audit_pages=max(1, math.ceil(audit_total / AUDIT_PER_PAGE)),
        ),
    )


def _version_or_404(session: SessionDep, version_id: int) -> ModelVersion:
    version = RegistryRepository(session).get(version_id)
    if version is None:
        raise ConsolePageError(404, "No such model", f"there is no model version {version_id}")
    return version


@router.get("/{version_id}")
def model_card(session: SessionDep, admin: AdminDep, version_id: VersionId) -> HTMLResponse:
    version = _version_or_404(session, version_id)
    card = views.model_card(version.metrics)
    audit, _ = queries.promotion_audit(session, version_id=version_id, limit=50, offset=0)
    return render(
        "model.html",
        page_context(
            session,
            admin,
            "models",
            version=version,
            card=card,
            cdf=views.regret_cdf_series(card["regret_cdf"]) if card["regret_cdf"] else None,
            audit=audit,
        ),
    )


@router.get("/{version_id}/{action}")
def confirm(
    session: SessionDep, admin: AdminDep, version_id: VersionId, action: Action
) -> HTMLResponse:
    """The confirmation step: what the promotion or demotion will replace, and a form."""
    version = _version_or_404(session, version_id)
    current = RegistryRepository(session).promoted(version.engine)
    return render(
        "confirm.html",
        page_context(session, admin, "models", version=version, current=current, action=action),
    )


@router.post("/{version_id}/{action}")
def act(
    request: Request,
    session: SessionDep,
    _admin: AdminDep,
    form: CheckedFormDep,
    version_id: VersionId,
    action: Action,
) -> RedirectResponse:
    if form.get("confirm") != "yes":
        raise ConsolePageError(400, "Not confirmed", f"tick the box to confirm the {action}")
    reason = form.get("reason", "")[:1900]
    try:
        if action == "promote":
            registry_service.promote_version(
                session,
                version_id,
                reason=f"[console] {reason}".strip(),
                forced=form.get("forced") == "yes",
            )
        else:
            registry_service.demote_version(
                session, version_id, reason=f"[console] {reason}".strip()
            )
    except PooltuneError as exc:
        raise ConsolePageError(exc.status_code, f"Not {action}d", str(exc.detail)) from exc
    # This replica serves the change at once, the others within promotion_check_s.
    request.app.state.predictor_cache.forget_pointers()
    return RedirectResponse(f"/console/models/{version_id}", status_code=303)
