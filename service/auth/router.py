from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Path, Request, status

from agents.wire import INT32_MAX
from service.auth import service
from service.auth.dependencies import AdminAuth, AnyAuth
from service.auth.schemas import (
    AgentCredentials,
    AgentEnroll,
    AgentRead,
    EnrollmentTokenCreate,
    EnrollmentTokenCreated,
    EnrollmentTokenRead,
)
from service.auth.token_cache import TokenCache
from service.config import Settings
from service.db import SessionDep
from service.errors import error_responses
from service.json_body import StrictJSONRoute
from service.pagination import Page, PageDep

router = APIRouter(prefix="/v1", tags=["auth"], route_class=StrictJSONRoute)

IdPath = Annotated[int, Path(ge=1, le=INT32_MAX, examples=[1])]


@router.post(
    "/enrollment-tokens",
    status_code=status.HTTP_201_CREATED,
    response_model=EnrollmentTokenCreated,
    summary="Create an enrolment token",
    description="Admin token. The secret is in the answer only; it is stored hashed. "
    "Without `hostname` the token enrols new hosts only; with `hostname` it enrols that "
    "hostname only, and may enrol it again when it is already enrolled (re-enrolment: the "
    "host's previous agents are revoked).",
    responses=error_responses(401, 403, 413, 422),
    openapi_extra={
        "requestBody": {
            "content": {"application/json": {"example": {"description": "rack 4", "max_uses": 10}}}
        }
    },
)
def create_enrollment_token(
    request: Request, session: SessionDep, _admin: AdminAuth, body: EnrollmentTokenCreate
) -> EnrollmentTokenCreated:
    settings: Settings = request.app.state.settings
    enrollment, token = service.create_enrollment_token(
        session,
        description=body.description,
        max_uses=body.max_uses,
        ttl_hours=body.ttl_hours or settings.enrollment_token_ttl_hours,
        hostname=body.hostname,
    )
    return EnrollmentTokenCreated(
        **EnrollmentTokenRead.model_validate(enrollment).model_dump(), token=token
    )


@router.post(
    "/enrollment-tokens/{token_id}/revoke",
    response_model=EnrollmentTokenRead,
    summary="Revoke an enrolment token",
    description="Admin token. Agents already enrolled with it keep their own tokens.",
    responses=error_responses(401, 403, 404, 422),
)
def revoke_enrollment_token(
    session: SessionDep, _admin: AdminAuth, token_id: IdPath
) -> EnrollmentTokenRead:
    return EnrollmentTokenRead.model_validate(service.revoke_enrollment_token(session, token_id))


@router.post(
    "/agents/enroll",
    status_code=status.HTTP_201_CREATED,
    response_model=AgentCredentials,
    summary="Enrol an agent",
    description="Spend an enrolment token: host facts in, an agent id and a long-lived agent "
    "token out. No bearer token needed; a wrong, expired, revoked or used-up enrolment "
    "token is a 401. A host (hostname and engine) that is already enrolled is a 409 unless "
    "the token is scoped to its hostname (then the host's previous agents are revoked); a "
    "token scoped to another hostname is a 403.",
    responses=error_responses(401, 403, 409, 413, 422),
    openapi_extra={
        "requestBody": {
            "content": {
                "application/json": {
                    "example": {
                        "enrollment_token": "pte_Jx3v...",
                        "host": {
                            "hostname": "db-17.example.net",
                            "engine": "mariadb",
                            "engine_version": "10.11.19-MariaDB",
                            "cpu_count": 16,
                            "memory_bytes": 68719476736,
                        },
                    }
                }
            }
        }
    },
)
def enroll_agent(request: Request, session: SessionDep, body: AgentEnroll) -> AgentCredentials:
    agent, token = service.enroll_agent(
        session, enrollment_token=body.enrollment_token, host=body.host
    )
    # A re-enrolment revokes the host's previous agents: this replica stops them at once.
    _token_cache(request).clear()
    return AgentCredentials(agent_id=agent.id, host_id=agent.host_id, agent_token=token)


@router.get(
    "/agents",
    response_model=Page[AgentRead],
    summary="List agents",
    description="Admin token. Newest first.",
    responses=error_responses(401, 403, 422),
)
def list_agents(session: SessionDep, _admin: AdminAuth, page: PageDep) -> Page[AgentRead]:
    agents, total = service.list_agents(session, limit=page.limit, offset=page.offset)
    return page.page([AgentRead.model_validate(agent) for agent in agents], total)


@router.post(
    "/agents/{agent_id}/revoke",
    response_model=AgentRead,
    summary="Revoke an agent's token",
    description="Admin token. The agent's tokens (the current one and, during a rotation's "
    "overlap, the previous one) stop working at once (401 afterwards).",
    responses=error_responses(401, 403, 404, 422),
)
def revoke_agent(
    request: Request, session: SessionDep, _admin: AdminAuth, agent_id: IdPath
) -> AgentRead:
    revoked = AgentRead.model_validate(service.revoke_agent(session, agent_id))
    _token_cache(request).forget_agent(agent_id)
    return revoked


@router.post(
    "/agents/{agent_id}/rotate",
    response_model=AgentCredentials,
    summary="Rotate an agent's token",
    description="The admin token, or the agent's own token. Answers a new token. The token the "
    "agent held keeps working until `previous_token_valid_until` "
    "(`POOLTUNE_TOKEN_ROTATION_OVERLAP_S`, 10 minutes by default) or until the new token is "
    "first used, whichever comes first: a rotation whose answer was lost is retried with the "
    "old token, and answers another new token (the unused one stops working). Rotations of "
    "one agent are serialised; concurrent ones leave exactly one new token. To cut a leaked "
    "token off at once, revoke the agent.",
    responses=error_responses(401, 403, 404, 422),
)
def rotate_agent_token(
    request: Request, session: SessionDep, principal: AnyAuth, agent_id: IdPath
) -> AgentCredentials:
    settings: Settings = request.app.state.settings
    agent, token = service.rotate_agent_token(
        session,
        agent_id,
        principal=principal,
        overlap=timedelta(seconds=settings.token_rotation_overlap_s),
    )
    _token_cache(request).forget_agent(agent_id)
    return AgentCredentials(
        agent_id=agent.id,
        host_id=agent.host_id,
        agent_token=token,
        previous_token_valid_until=agent.previous_token_expires_at,
    )


def _token_cache(request: Request) -> TokenCache:
    """This replica's agent-token cache; others see a change within its bound."""
    cache: TokenCache = request.app.state.token_cache
    return cache
