from __future__ import annotations

import logging

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel, Field
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from service.db import SessionDep
from service.errors import ErrorBody, PooltuneError
from service.observability import Metrics

logger = logging.getLogger(__name__)

router = APIRouter(tags=["operations"])


class HealthStatus(BaseModel):
    status: str = Field(examples=["ok"])


class DatabaseUnavailable(PooltuneError):
    status_code = 503
    error = "database_unavailable"


@router.get(
    "/healthz",
    response_model=HealthStatus,
    summary="Liveness",
    description="The process answers. Does not touch the database.",
)
def healthz() -> HealthStatus:
    return HealthStatus(status="ok")


@router.get(
    "/readyz",
    response_model=HealthStatus,
    summary="Readiness",
    description="The database answers `SELECT 1`; 503 `database_unavailable` otherwise.",
    responses={503: {"model": ErrorBody, "description": "The database does not answer."}},
)
def readyz(session: SessionDep) -> HealthStatus:
    try:
        session.execute(text("SELECT 1"))
    except SQLAlchemyError as exc:
        logger.warning("readiness check failed", extra={"error": str(exc)})
        raise DatabaseUnavailable("the database does not answer") from exc
    return HealthStatus(status="ready")


@router.get(
    "/metrics",
    summary="Prometheus metrics",
    description="Request counts and latency per route, reports ingested, recommendations by "
    "source, model errors and the model version in use, in Prometheus text format.",
    response_class=Response,
    responses={
        200: {"content": {CONTENT_TYPE_LATEST: {"example": "pooltune_http_requests_total"}}}
    },
)
def metrics(request: Request) -> Response:
    registry: Metrics = request.app.state.metrics
    return Response(generate_latest(registry.registry), media_type=CONTENT_TYPE_LATEST)
