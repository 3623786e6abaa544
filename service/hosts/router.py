from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from agents.knobs import Engine
from agents.wire import INT32_MAX
from service.auth.dependencies import AdminAuth
from service.db import SessionDep
from service.errors import error_responses
from service.hosts import service
from service.hosts.schemas import HostDetail, HostRead
from service.json_body import StrictJSONRoute
from service.pagination import Page, PageDep
from service.reports import service as report_service

router = APIRouter(prefix="/v1/hosts", tags=["hosts"], route_class=StrictJSONRoute)


@router.get(
    "",
    response_model=Page[HostRead],
    summary="List hosts",
    description="Enrolled hosts, newest first, with their current tuple. Admin token.",
    responses=error_responses(401, 403, 422),
)
def list_hosts(
    session: SessionDep,
    _admin: AdminAuth,
    page: PageDep,
    engine: Annotated[Engine | None, Query(description="Only hosts of this engine.")] = None,
) -> Page[HostRead]:
    hosts, total = service.list_hosts(
        session, engine=engine.value if engine else None, limit=page.limit, offset=page.offset
    )
    return page.page([HostRead.model_validate(host) for host in hosts], total)


@router.get(
    "/{host_id}",
    response_model=HostDetail,
    summary="Get a host",
    description="Facts, current tuple, the last report and the gain over the default tuple "
    "where it was measured. Admin token.",
    responses=error_responses(401, 403, 404, 422),
)
def get_host(
    session: SessionDep,
    _admin: AdminAuth,
    host_id: Annotated[int, Path(ge=1, le=INT32_MAX, examples=[1])],
) -> HostDetail:
    host = service.get_host(session, host_id)
    detail = HostDetail.model_validate(host)
    report = report_service.latest_report(session, host.id)
    if report is not None:
        detail.last_report = report_service.summarize(report)
        detail.gain_over_default = report_service.gain_over_default(report)
    return detail
