"""Enrolment, agent tokens (hashed, revocable, rotatable) and token checks."""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.orm import Session

from agents.wire import HostFacts
from service.auth.models import Agent, EnrollmentToken
from service.auth.repository import AuthRepository
from service.auth.tokens import AGENT_TOKEN_PREFIX, ENROLLMENT_TOKEN_PREFIX, hash_token, new_token
from service.db import utcnow
from service.errors import ForbiddenError, NotFoundError, UnauthorizedError
from service.hosts import service as host_service


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the admin, or an agent bound to one host."""

    is_admin: bool
    agent_id: int | None = None
    host_id: int | None = None


ADMIN = Principal(is_admin=True)


def authenticate(session: Session, token: str | None, *, admin_token: str) -> Principal:
    if not token:
        raise UnauthorizedError("missing bearer token (Authorization: Bearer <token>)")
    if hmac.compare_digest(token.encode(), admin_token.encode()):
        return ADMIN
    if token.startswith(AGENT_TOKEN_PREFIX):
        agent = AuthRepository(session).get_agent_by_token_hash(hash_token(token))
        if agent is not None:
            if agent.revoked_at is not None:
                raise UnauthorizedError("this agent token was revoked")
            return Principal(is_admin=False, agent_id=agent.id, host_id=agent.host_id)
    raise UnauthorizedError("invalid token")


def create_enrollment_token(
    session: Session, *, description: str, max_uses: int, ttl_hours: float
) -> tuple[EnrollmentToken, str]:
    token = new_token(ENROLLMENT_TOKEN_PREFIX)
    enrollment = EnrollmentToken(
        token_hash=hash_token(token),
        description=description,
        max_uses=max_uses,
        uses=0,
        created_at=utcnow(),
        expires_at=utcnow() + timedelta(hours=ttl_hours),
    )
    AuthRepository(session).add(enrollment)
    return enrollment, token


def revoke_enrollment_token(session: Session, token_id: int) -> EnrollmentToken:
    enrollment = AuthRepository(session).get_enrollment_token(token_id)
    if enrollment is None:
        raise NotFoundError(f"no enrollment token with id {token_id}")
    if enrollment.revoked_at is None:
        enrollment.revoked_at = utcnow()
        session.flush()
    return enrollment


def enroll_agent(session: Session, *, enrollment_token: str, host: HostFacts) -> tuple[Agent, str]:
    """Spend one use of ``enrollment_token`` and create an agent for ``host``."""
    repository = AuthRepository(session)
    enrollment = repository.get_enrollment_token_by_hash(hash_token(enrollment_token))
    if enrollment is None:
        raise UnauthorizedError("unknown enrollment token")
    if enrollment.revoked_at is not None:
        raise UnauthorizedError("this enrollment token was revoked")
    if enrollment.expires_at <= utcnow():
        raise UnauthorizedError("this enrollment token has expired; ask for a new one")
    if enrollment.uses >= enrollment.max_uses:
        raise UnauthorizedError("this enrollment token has been used up")
    enrollment.uses += 1
    host_row = host_service.upsert_host(session, host)
    token = new_token(AGENT_TOKEN_PREFIX)
    agent = Agent(
        host_id=host_row.id,
        enrollment_token_id=enrollment.id,
        token_hash=hash_token(token),
        token_prefix=token[:12],
        created_at=utcnow(),
    )
    repository.add(agent)
    return agent, token


def get_agent(session: Session, agent_id: int) -> Agent:
    agent = AuthRepository(session).get_agent(agent_id)
    if agent is None:
        raise NotFoundError(f"no agent with id {agent_id}")
    return agent


def revoke_agent(session: Session, agent_id: int) -> Agent:
    agent = get_agent(session, agent_id)
    if agent.revoked_at is None:
        agent.revoked_at = utcnow()
        session.flush()
    return agent


def rotate_agent_token(
    session: Session, agent_id: int, *, principal: Principal
) -> tuple[Agent, str]:
    """A new token for the agent; the old one stops working at once."""
    if not principal.is_admin and principal.agent_id != agent_id:
        raise ForbiddenError("an agent may rotate only its own token")
    agent = get_agent(session, agent_id)
    if agent.revoked_at is not None:
        raise ForbiddenError("a revoked agent cannot get a new token; enrol again")
    token = new_token(AGENT_TOKEN_PREFIX)
    agent.token_hash = hash_token(token)
    agent.token_prefix = token[:12]
    agent.rotated_at = utcnow()
    session.flush()
    return agent, token


def list_agents(session: Session, *, limit: int, offset: int) -> tuple[Sequence[Agent], int]:
    return AuthRepository(session).paginate_agents(limit=limit, offset=offset)
