"""The FastAPI application factory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from service import health
from service.approvals.router import router as approvals_router
from service.auth.router import router as auth_router
from service.config import Settings, get_settings
from service.console.setup import install_console
from service.db import build_engine, build_sessionmaker
from service.errors import install_error_handlers
from service.hosts.router import router as hosts_router
from service.observability import Metrics, ObservabilityMiddleware
from service.recommendations.predictor_cache import PredictorCache
from service.recommendations.router import router as recommendations_router
from service.registry.router import router as registry_router
from service.reports.router import router as reports_router

DESCRIPTION = """\
The central pooltune service: agents enrol, upload climb reports (idempotently) and ask for
starting tuples; admins manage enrolment tokens, agents and the model registry.

Authenticate with `Authorization: Bearer <token>`: the admin token from the service's
settings, or an agent token from `POST /v1/agents/enroll`. Errors are always
`{"error": <code>, "detail": <why>}`.

Bodies are UTF-8 JSON; a body that is not, or an object that gives a key twice, is a 422
naming where. When the database is down or does not answer within its timeouts, every route
that needs it answers 503 `database_unavailable` with `Retry-After`; `/healthz` never waits
for the database. Limits, timeouts, token rotation and the enrolment policy:
docs/service.md.
"""


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings: Settings = app.state.settings
    engine = build_engine(settings)
    app.state.engine = engine
    app.state.sessionmaker = build_sessionmaker(engine)
    app.state.readiness = health.ReadinessProbe(settings)
    try:
        yield
    finally:
        app.state.readiness.close()
        engine.dispose()


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    app = FastAPI(
        title="pooltune service",
        version="0.1.0",
        description=DESCRIPTION,
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.metrics = Metrics()
    app.state.predictor_cache = PredictorCache(allow_pickle=settings.allow_pickle_models)
    install_error_handlers(app)
    app.add_middleware(
        ObservabilityMiddleware,
        metrics=app.state.metrics,
        max_body_bytes=settings.max_body_bytes,
    )
    app.include_router(health.router)
    app.include_router(auth_router)
    app.include_router(hosts_router)
    app.include_router(reports_router)
    app.include_router(recommendations_router)
    app.include_router(registry_router)
    app.include_router(approvals_router)
    install_console(app)
    return app
