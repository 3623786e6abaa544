"""The Fleet page (every host, one page at a time) and the Host page (one host, its climbs)."""

from __future__ import annotations

import math
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from fastapi.responses import HTMLResponse

from agents.knobs import POOL_SIZE_KNOB, Engine, catalog
from service.approvals import service as approval_service
from service.approvals.repository import ApprovalRepository
from service.console import charts, queries, views
from service.console.context import page_context
from service.console.dependencies import AdminDep, ConsolePageError
from service.console.queries import FleetFilter, FleetKind, FleetSort
from service.console.templating import render
from service.db import SessionDep, utcnow
from service.hosts.models import Host
from service.reports.trace_codec import decode_trace

router = APIRouter(prefix="/console", include_in_schema=False)

PER_PAGE = 50
REPORTS_PER_PAGE = 20


@router.get("/fleet")
def fleet(
    session: SessionDep,
    admin: AdminDep,
    engine: Annotated[Engine | None, Query()] = None,
    q: Annotated[str, Query(max_length=253)] = "",
    kind: Annotated[FleetKind, Query()] = FleetKind.ENROLLED,
    pending: Annotated[bool, Query()] = False,
    sort: Annotated[FleetSort, Query()] = FleetSort.HOSTNAME,
    desc: Annotated[bool, Query()] = False,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
) -> HTMLResponse:
    ApprovalRepository(session).expire_due(utcnow())
    fleet_filter = FleetFilter(
        engine=engine.value if engine else None,
        search=q.strip(),
        kind=kind,
        pending_only=pending,
        sort=sort,
        descending=desc,
        limit=PER_PAGE,
        offset=(page - 1) * PER_PAGE,
    )
    rows, total = queries.fleet_page(session, fleet_filter)
    ids = [row.id for row in rows]
    approvals = approval_service.latest_per_host(session, ids)
    recommendations = queries.latest_recommendations(session, ids)
    hosts = []
    for row in rows:
        approval = approvals.get(row.id)
        recommendation = recommendations.get(row.id)
        predicted = None
        if approval is not None and approval.predicted_gain is not None:
            predicted = views.gain_of(
                approval.predicted_gain, approval.predicted_gain_low, approval.predicted_gain_high
            )
        elif recommendation is not None:
            predicted = views.gain_of(
                recommendation.predicted_gain,
                recommendation.predicted_gain_low,
                recommendation.predicted_gain_high,
            )
        hosts.append(
            {
                "row": row,
                "phase": views.agent_phase(
                    has_agent=bool(row.has_agent),
                    last_report_at=row.last_report_at,
                    converged=row.converged,
                    approval=approval,
                ),
                "knobs": views.knob_rows(row.engine, row.cpu_count, row.current_tuple),
                "predicted": predicted,
            }
        )
    filters: dict[str, Any] = {
        "engine": fleet_filter.engine or "",
        "q": fleet_filter.search,
        "kind": kind.value,
        "pending": "true" if pending else "",
    }
    filters = {name: value for name, value in filters.items() if value}
    params = filters | {"sort": sort.value} | ({"desc": "true"} if desc else {})
    return render(
        "fleet.html",
        page_context(
            session,
            admin,
            "fleet",
            hosts=hosts,
            total=total,
            page=page,
            pages=max(1, math.ceil(total / PER_PAGE)),
            params=params,
            filters=filters,
            sort=sort.value,
            desc=desc,
            kind=kind.value,
            pending=pending,
            engine=fleet_filter.engine or "",
            q=fleet_filter.search,
            counts=queries.fleet_counts(session),
            engines=[e.value for e in Engine],
            kinds=[k.value for k in FleetKind],
            sorts=[s.value for s in FleetSort],
            now=utcnow(),
        ),
    )


@router.get("/hosts/{host_id}")
def host(
    session: SessionDep,
    admin: AdminDep,
    host_id: Annotated[int, Path(ge=1, le=2**31 - 1)],
    report: Annotated[int | None, Query(ge=1, le=2**63 - 1)] = None,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
) -> HTMLResponse:
    row = session.get(Host, host_id)
    if row is None:
        raise ConsolePageError(404, "No such host", f"there is no host with id {host_id}")
    ApprovalRepository(session).expire_due(utcnow())
    shown = queries.host_report(session, host_id, report)
    if report is not None and shown is None:
        raise ConsolePageError(404, "No such report", f"host {host_id} has no report {report}")
    size_knob = POOL_SIZE_KNOB[Engine(row.engine)]
    trace = decode_trace(shown.trace) if shown is not None else []
    reports, reports_total = queries.host_reports(
        session, host_id, limit=REPORTS_PER_PAGE, offset=(page - 1) * REPORTS_PER_PAGE
    )
    approvals = queries.host_approvals(session, host_id, limit=10)
    agents = queries.host_agents(session, host_id)
    latest_approval = approvals[0] if approvals else None
    return render(
        "host.html",
        page_context(
            session,
            admin,
            "fleet",
            host=row,
            agents=agents,
            phase=views.agent_phase(
                has_agent=bool(agents),
                last_report_at=row.last_report_at,
                converged=shown.converged if shown is not None else None,
                approval=latest_approval,
            ),
            knobs=views.knob_rows(row.engine, row.cpu_count, row.current_tuple),
            engine_knobs=catalog(row.engine),
            report=shown,
            chart=charts.trace_series(trace, size_knob) if trace else None,
            curve=charts.measured_curve(trace, size_knob) if trace else None,
            reports=reports,
            reports_total=reports_total,
            page=page,
            pages=max(1, math.ceil(reports_total / REPORTS_PER_PAGE)),
            recommendations=queries.host_recommendations(session, host_id, limit=20),
            approvals=approvals,
            predicted_gain=approval_service.predicted_gain,
            gain_of=views.gain_of,
            now=utcnow(),
        ),
    )
