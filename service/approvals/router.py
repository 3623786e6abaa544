from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Path, Query, Request, Response, status

from service.approvals import service
from service.approvals.models import ApprovalState
from service.approvals.schemas import (
    ApprovalCreate,
    ApprovalDecision,
    ApprovalRead,
    ApprovalRejection,
)
from service.auth.dependencies import AdminAuth, AgentAuth, AnyAuth
from service.config import Settings
from service.db import SessionDep
from service.errors import error_responses
from service.json_body import StrictJSONRoute
from service.pagination import Page, PageDep

router = APIRouter(prefix="/v1/approvals", tags=["approvals"], route_class=StrictJSONRoute)

ApprovalId = Annotated[int, Path(ge=1, le=2**63 - 1, examples=[12])]


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=ApprovalRead,
    summary="Ask an admin to approve a recommendation",
    description="Agent token (approval mode). The agent sends the recommendation it received "
    "and waits: it polls `GET /v1/approvals/{id}` until the state is `approved` (apply "
    "`approved_tuple`, then climb), `rejected` or `expired` (change nothing). Idempotent on "
    "`idempotency_key`: a retry answers 200 with the stored request. A new request "
    "supersedes the host's undecided older one.",
    responses={
        200: {"model": ApprovalRead, "description": "Already stored (a retry)."},
        **error_responses(401, 403, 409, 422),
    },
)
def create_approval(
    request: Request,
    response: Response,
    session: SessionDep,
    agent: AgentAuth,
    body: ApprovalCreate,
) -> ApprovalRead:
    assert agent.host_id is not None
    settings: Settings = request.app.state.settings
    result = service.create_approval(
        session,
        body,
        agent_id=agent.agent_id,
        host_id=agent.host_id,
        max_ttl_s=int(settings.approval_ttl_hours * 3600),
    )
    if not result.created:
        response.status_code = status.HTTP_200_OK
    return service.to_read(result.approval)


@router.get(
    "",
    response_model=Page[ApprovalRead],
    summary="List approval requests",
    description="The admin token lists every host's; an agent token lists its own host's. "
    "Newest first; expired requests show as `expired`.",
    responses=error_responses(401, 422),
)
def list_approvals(
    session: SessionDep,
    principal: AnyAuth,
    page: PageDep,
    state: Annotated[ApprovalState | None, Query()] = None,
    host_id: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None,
) -> Page[ApprovalRead]:
    if not principal.is_admin:
        host_id = principal.host_id
    approvals, total = service.list_approvals(
        session, state=state, host_id=host_id, limit=page.limit, offset=page.offset
    )
    return page.page([service.to_read(approval) for approval in approvals], total)


@router.get(
    "/{approval_id}",
    response_model=ApprovalRead,
    summary="Get an approval request (the agent polls this)",
    description="The admin token, or the agent token of the request's host.",
    responses=error_responses(401, 404, 422),
)
def get_approval(session: SessionDep, principal: AnyAuth, approval_id: ApprovalId) -> ApprovalRead:
    host_id = None if principal.is_admin else principal.host_id
    return service.to_read(service.get_approval(session, approval_id, host_id=host_id))


@router.post(
    "/{approval_id}/approve",
    response_model=ApprovalRead,
    summary="Approve a request",
    description="Admin token. `values` optionally replaces the recommended tuple (each knob "
    "inside the engine's catalog bounds, 422 naming the knob otherwise). 409 unless pending.",
    responses=error_responses(401, 403, 404, 409, 422),
)
def approve(
    session: SessionDep,
    _admin: AdminAuth,
    approval_id: ApprovalId,
    body: Annotated[ApprovalDecision | None, Body()] = None,
) -> ApprovalRead:
    decision = body or ApprovalDecision()
    approval = service.approve(
        session, approval_id, values=decision.values, reason=decision.reason, actor="admin"
    )
    return service.to_read(approval)


@router.post(
    "/{approval_id}/reject",
    response_model=ApprovalRead,
    summary="Reject a request",
    description="Admin token. The agent changes nothing. 409 unless pending.",
    responses=error_responses(401, 403, 404, 409, 422),
)
def reject(
    session: SessionDep,
    _admin: AdminAuth,
    approval_id: ApprovalId,
    body: Annotated[ApprovalRejection | None, Body()] = None,
) -> ApprovalRead:
    rejection = body or ApprovalRejection()
    approval = service.reject(session, approval_id, reason=rejection.reason, actor="admin")
    return service.to_read(approval)
