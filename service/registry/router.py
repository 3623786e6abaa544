from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Path, Query, Request

from agents.knobs import Engine
from agents.wire import INT32_MAX, Text
from service.auth.dependencies import AdminAuth
from service.db import SessionDep
from service.errors import error_responses
from service.json_body import StrictJSONRoute
from service.pagination import Page, PageDep
from service.registry import service
from service.registry.schemas import (
    MODEL_NAME_MAX_LENGTH,
    DemoteRequest,
    ModelVersionDetail,
    ModelVersionRead,
    PromoteRequest,
    PromotionEventRead,
)

router = APIRouter(prefix="/v1/models", tags=["registry"], route_class=StrictJSONRoute)

VersionId = Annotated[int, Path(ge=1, le=INT32_MAX, examples=[3])]


def _detail(session: SessionDep, version_id: int) -> ModelVersionDetail:
    version = service.get_version(session, version_id)
    detail = ModelVersionDetail.model_validate(version)
    detail.history = [
        PromotionEventRead.model_validate(event)
        for event in service.promotion_history(session, version_id)
    ]
    return detail


@router.get(
    "",
    response_model=Page[ModelVersionRead],
    summary="List model versions",
    description="Admin token. Newest first; filter by engine and model name.",
    responses=error_responses(401, 403, 422),
)
def list_versions(
    session: SessionDep,
    _admin: AdminAuth,
    page: PageDep,
    engine: Annotated[Engine | None, Query()] = None,
    name: Annotated[Text | None, Query(max_length=MODEL_NAME_MAX_LENGTH)] = None,
) -> Page[ModelVersionRead]:
    versions, total = service.list_versions(
        session,
        engine=engine.value if engine else None,
        name=name,
        limit=page.limit,
        offset=page.offset,
    )
    return page.page([ModelVersionRead.model_validate(version) for version in versions], total)


@router.get(
    "/{version_id}",
    response_model=ModelVersionDetail,
    summary="Get a model version",
    description="Admin token. Metrics, training data summary, artifact sha256 and size, and "
    "the promotion history (the artifact itself is not served).",
    responses=error_responses(401, 403, 404, 422),
)
def get_version(
    session: SessionDep, _admin: AdminAuth, version_id: VersionId
) -> ModelVersionDetail:
    return _detail(session, version_id)


@router.post(
    "/{version_id}/promote",
    response_model=ModelVersionDetail,
    summary="Promote a model version",
    description="Admin token. Makes this version its engine's answering model (replacing the "
    "current one), picked up by every replica without a restart. Unless `forced`, it must "
    "beat the promoted version's `regret` metric (409 `promotion_rejected` otherwise).",
    responses=error_responses(401, 403, 404, 409, 413, 422),
)
def promote_version(
    http_request: Request,
    session: SessionDep,
    _admin: AdminAuth,
    version_id: VersionId,
    body: Annotated[PromoteRequest | None, Body()] = None,
) -> ModelVersionDetail:
    request = body or PromoteRequest()
    service.promote_version(session, version_id, reason=request.reason, forced=request.forced)
    _promotion_changed(http_request)
    return _detail(session, version_id)


@router.post(
    "/{version_id}/demote",
    response_model=ModelVersionDetail,
    summary="Demote a model version",
    description="Admin token. The engine answers from the heuristic until another promotion. "
    "409 if the version is not promoted.",
    responses=error_responses(401, 403, 404, 409, 413, 422),
)
def demote_version(
    http_request: Request,
    session: SessionDep,
    _admin: AdminAuth,
    version_id: VersionId,
    body: Annotated[DemoteRequest | None, Body()] = None,
) -> ModelVersionDetail:
    request = body or DemoteRequest()
    service.demote_version(session, version_id, reason=request.reason)
    _promotion_changed(http_request)
    return _detail(session, version_id)


def _promotion_changed(request: Request) -> None:
    """This replica reads the promoted versions again at its next recommendation; the
    others within ``promotion_check_s``."""
    request.app.state.predictor_cache.forget_pointers()
