"""Liveness, readiness and metrics: answered on the event loop, never behind database work.

``/healthz`` and ``/metrics`` are ``async`` and take no database dependency, so neither the
connection pool nor the worker threads of the synchronous routes (all stuck on a frozen
database, say) can delay them. ``/readyz`` checks the database on its own engine (no pool) in
its own threads, bounded by ``readyz_timeout_s``.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel, Field
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from service.config import Settings
from service.db import build_engine
from service.errors import DatabaseUnavailableError, ErrorBody
from service.observability import Metrics

logger = logging.getLogger(__name__)

router = APIRouter(tags=["operations"])


class HealthStatus(BaseModel):
    status: str = Field(examples=["ok"])


class ReadinessProbe:
    """``SELECT 1`` on a fresh connection, in threads of its own, within a deadline."""

    def __init__(self, settings: Settings) -> None:
        self.timeout_s = settings.readyz_timeout_s
        self.engine: Engine = build_engine(settings, io_timeout_s=settings.readyz_timeout_s)
        self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="readyz")

    def _select_one(self) -> None:
        with self.engine.connect() as connection:
            connection.execute(text("SELECT 1"))

    async def check(self) -> str | None:
        """None when the database answers in time, else why not."""
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(
                loop.run_in_executor(self._executor, self._select_one), self.timeout_s
            )
        except TimeoutError:
            return f"no answer within {self.timeout_s:g} s"
        except SQLAlchemyError as exc:
            return f"{type(exc).__name__}: {str(getattr(exc, 'orig', exc)).strip()[:300]}"
        return None

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
        self.engine.dispose()


@router.get(
    "/healthz",
    response_model=HealthStatus,
    summary="Liveness",
    description="The process answers. Touches neither the database nor the worker threads "
    "of the other routes, so it stays fast while the database is down or frozen.",
)
async def healthz() -> HealthStatus:
    return HealthStatus(status="ok")


@router.get(
    "/readyz",
    response_model=HealthStatus,
    summary="Readiness",
    description="The database answers `SELECT 1` on a fresh connection within "
    "`POOLTUNE_READYZ_TIMEOUT_S` (2 s by default); 503 `database_unavailable` otherwise.",
    responses={
        503: {
            "model": ErrorBody,
            "description": "The database does not answer (in time).",
            "headers": {"Retry-After": {"schema": {"type": "integer"}}},
        }
    },
)
async def readyz(request: Request) -> HealthStatus:
    probe: ReadinessProbe = request.app.state.readiness
    problem = await probe.check()
    if problem is not None:
        logger.warning("readiness check failed", extra={"error": problem})
        raise DatabaseUnavailableError(f"the database does not answer: {problem}")
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
async def metrics(request: Request) -> Response:
    registry: Metrics = request.app.state.metrics
    return Response(generate_latest(registry.registry), media_type=CONTENT_TYPE_LATEST)
