from __future__ import annotations

from fastapi import APIRouter, Request

from agents.wire import RecommendationRequest, RecommendationResponse
from service.auth.dependencies import HotAnyAuth
from service.config import Settings
from service.errors import error_responses
from service.hot_db import HotDBDep
from service.json_body import StrictJSONRoute
from service.observability import Metrics
from service.recommendations import service
from service.recommendations.predictor_cache import PredictorCache

router = APIRouter(
    prefix="/v1/recommendations", tags=["recommendations"], route_class=StrictJSONRoute
)

REQUEST_EXAMPLE = {
    "schema_version": 1,
    "host": {
        "hostname": "db-17.example.net",
        "engine": "mariadb",
        "engine_version": "10.11.19-MariaDB",
        "cpu_count": 16,
        "memory_bytes": 68719476736,
    },
    "profile": {
        "window_s": 60,
        "connections": 200,
        "active_connections": 40,
        "qps": 12000,
        "tps": 800,
        "read_fraction": 0.8,
        "latency_ms": 1.6,
        "cpu_ms_per_request": 0.4,
        "wait_ms_per_request": 1.2,
    },
}


@router.post(
    "",
    response_model=RecommendationResponse,
    summary="Ask for a starting tuple",
    description="An agent token (or the admin token). Answers from the engine's promoted "
    "model, or from the heuristic cores × (1 + W/S) clipped to the catalog and to the "
    "connection count when no model is promoted or the model fails; `source` and "
    "`model_version` say which. Every answer is logged for later evaluation. An agent asks "
    "for its own host only (`host.hostname` and `host.engine` as enrolled; 403 otherwise); "
    "the admin may ask for any host. The answer is given once its log row is committed "
    '(docs/service.md, "Scale").',
    responses=error_responses(401, 403, 413, 422),
    openapi_extra={"requestBody": {"content": {"application/json": {"example": REQUEST_EXAMPLE}}}},
)
async def recommend(
    request: Request, hot_db: HotDBDep, principal: HotAnyAuth, body: RecommendationRequest
) -> RecommendationResponse:
    cache: PredictorCache = request.app.state.predictor_cache
    settings: Settings = request.app.state.settings
    outcome = await service.recommend_hot(
        hot_db,
        body,
        cache=cache,
        principal=principal,
        promotion_check_s=settings.promotion_check_s,
    )
    metrics: Metrics = request.app.state.metrics
    engine = body.host.engine.value
    metrics.recommendations.labels(engine, outcome.response.source.value).inc()
    if outcome.fallback_reason is not None:
        stage = outcome.fallback_reason.split(":", 1)[0]
        metrics.model_errors.labels(engine, stage).inc()
    in_use = outcome.pointer.version if outcome.pointer is not None else 0
    metrics.model_version_in_use.labels(engine).set(in_use)
    return outcome.response
