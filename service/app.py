"""The FastAPI application factory."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from agents.knobs import Engine as DatabaseEngine
from service import health
from service.approvals.router import router as approvals_router
from service.auth.router import router as auth_router
from service.auth.token_cache import TokenCache
from service.config import Settings, get_settings
from service.console.setup import install_console
from service.db import build_engine, build_sessionmaker
from service.errors import install_error_handlers
from service.hosts.router import router as hosts_router
from service.hot_db import AsyncEngineHotDB, BatchSettings, ThreadedHotDB, build_async_engine
from service.logging_setup import ensure_logging
from service.loop_lag import LoopLagWatch
from service.observability import Metrics, ObservabilityMiddleware
from service.recommendations.predictor_cache import PredictorCache
from service.recommendations.router import router as recommendations_router
from service.registry.router import router as registry_router
from service.reports.router import router as reports_router

logger = logging.getLogger(__name__)

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


def _build_hot_db(settings: Settings, engine: Engine) -> AsyncEngineHotDB | ThreadedHotDB:
    """The hot routes' database: the asyncio engine on PostgreSQL, threads on SQLite."""
    batch = BatchSettings.from_settings(settings)
    if settings.is_sqlite:
        return ThreadedHotDB(engine, batch)
    return AsyncEngineHotDB(build_async_engine(settings), batch)


def _preload_models(app: FastAPI) -> None:
    """Load every engine's promoted model before the first request (best effort: with the
    database down, the first request loads it)."""
    cache: PredictorCache = app.state.predictor_cache
    try:
        with app.state.sessionmaker() as session:
            cache.preload(session, [engine.value for engine in DatabaseEngine])
    except SQLAlchemyError as exc:
        logger.warning("promoted models not preloaded", extra={"error": str(exc)})


#: Allocations between young-generation collections once the collector is quieted.
GC_YOUNG_THRESHOLD = 50_000


def quiet_garbage_collector() -> None:
    """After start-up: collect once, freeze what is alive (it lives as long as the process)
    so later full collections walk only request garbage, and collect the young generation
    every :data:`GC_YOUNG_THRESHOLD` allocations instead of 700. Only for a serving process:
    a process that builds many apps (the tests) would keep each one's objects forever."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings: Settings = app.state.settings
    engine = build_engine(settings)
    app.state.engine = engine
    app.state.sessionmaker = build_sessionmaker(engine)
    app.state.readiness = health.ReadinessProbe(settings)
    hot_db = _build_hot_db(settings, engine)
    app.state.hot_db = hot_db
    await asyncio.to_thread(_preload_models, app)
    if settings.gc_freeze:
        quiet_garbage_collector()
    lag = LoopLagWatch(app.state.metrics.event_loop_lag, warn_ms=settings.loop_lag_warn_ms)
    lag.start()
    try:
        yield
    finally:
        await lag.stop()
        # Drain the batched writes first: every queued row is written before the engines go.
        await hot_db.close()
        if isinstance(hot_db, AsyncEngineHotDB):
            await hot_db.engine.dispose()
        app.state.readiness.close()
        engine.dispose()


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    ensure_logging(settings.log_level)
    app = FastAPI(
        title="pooltune service",
        version="0.1.0",
        description=DESCRIPTION,
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.metrics = Metrics()
    app.state.predictor_cache = PredictorCache(allow_pickle=settings.allow_pickle_models)
    app.state.token_cache = TokenCache(settings.agent_token_cache_s)
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
