from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response, status

from agents.knobs import Engine
from agents.wire import INT32_MAX, INT64_MAX, ClimbReport, UtcDatetime
from service.auth.dependencies import AdminAuth, HotAgentAuth
from service.db import SessionDep
from service.errors import error_responses
from service.hot_db import HotDBDep
from service.json_body import StrictJSONRoute
from service.observability import Metrics
from service.pagination import Page, PageDep
from service.reports import service
from service.reports.schemas import ReportRead, ReportSummary

router = APIRouter(prefix="/v1/reports", tags=["reports"], route_class=StrictJSONRoute)

REPORT_EXAMPLE: dict[str, Any] = {
    "schema_version": 1,
    "idempotency_key": "3f1c2a9e-6f7b-4b1e-9d2a-0c4e5b6a7d8f",
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
        "cpu_ms_per_request": 0.4,
        "wait_ms_per_request": 1.2,
    },
    "start_tuple": {"engine": "mariadb", "values": {"thread_pool_size": 16}},
    "start_source": "heuristic",
    "optimal_tuple": {"engine": "mariadb", "values": {"thread_pool_size": 24}},
    "default_tuple": {"engine": "mariadb", "values": {"thread_pool_size": 16}},
    "throughput_start": 11000,
    "throughput_optimal": 12900,
    "throughput_default": 11000,
    "converged": True,
    "samples_to_converge": 64,
    "trace": [
        {
            "t_s": 0,
            "knobs": {"thread_pool_size": 16},
            "throughput": 11000,
            "connections": 200,
            "state": "USUAL",
        }
    ],
    "climber": {"name": "pooltune", "version": "1", "settings": {}},
    "started_at": "2026-01-05T10:00:00Z",
    "finished_at": "2026-01-05T10:02:10Z",
}


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=ReportSummary,
    summary="Upload a climb report",
    description="Agent token; the report must be for the agent's own host. Idempotent on "
    "`idempotency_key`: the first upload answers 201, every retry of the same payload 200 "
    "with the same body and stores nothing. The same key with a different payload is a 409.",
    responses={
        200: {"model": ReportSummary, "description": "Already stored (a retry)."},
        **error_responses(401, 403, 409, 413, 422),
    },
    openapi_extra={"requestBody": {"content": {"application/json": {"example": REPORT_EXAMPLE}}}},
)
async def upload_report(
    request: Request,
    response: Response,
    hot_db: HotDBDep,
    agent: HotAgentAuth,
    report: ClimbReport,
) -> ReportSummary:
    result = await service.ingest_report_hot(hot_db, report, principal=agent)
    metrics: Metrics = request.app.state.metrics
    metrics.reports_ingested.labels("created" if result.created else "duplicate").inc()
    if not result.created:
        response.status_code = status.HTTP_200_OK
    return service.summarize(result.row)


@router.get(
    "",
    response_model=Page[ReportSummary],
    summary="List reports",
    description="Admin token. Newest first; filter by host, engine, climb end time and "
    "convergence.",
    responses=error_responses(401, 403, 422),
)
def list_reports(
    session: SessionDep,
    _admin: AdminAuth,
    page: PageDep,
    host_id: Annotated[int | None, Query(ge=1, le=INT32_MAX)] = None,
    engine: Annotated[Engine | None, Query()] = None,
    since: Annotated[
        UtcDatetime | None,
        Query(description="finished_at >= since (ISO 8601 with zone; years 1-9999 in UTC)."),
    ] = None,
    until: Annotated[
        UtcDatetime | None,
        Query(description="finished_at < until (ISO 8601 with zone; years 1-9999 in UTC)."),
    ] = None,
    converged: Annotated[bool | None, Query()] = None,
) -> Page[ReportSummary]:
    reports, total = service.list_reports(
        session,
        host_id=host_id,
        engine=engine.value if engine else None,
        since=since,
        until=until,
        converged=converged,
        limit=page.limit,
        offset=page.offset,
    )
    return page.page([service.summarize(report) for report in reports], total)


@router.get(
    "/{report_id}",
    response_model=ReportRead,
    summary="Get a report, whole",
    description="Admin token. The summary plus the payload as uploaded, trace included.",
    responses=error_responses(401, 403, 404, 422),
)
def get_report(
    session: SessionDep,
    _admin: AdminAuth,
    report_id: Annotated[int, Path(ge=1, le=INT64_MAX, examples=[42])],
) -> ReportRead:
    return service.read_report(session, report_id)
