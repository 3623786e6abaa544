"""Enrolment, agent tokens (hashed, revocable, rotatable) and token checks.

The enrolment policy and the rotation overlap are explained in docs/service.md.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from sqlalchemy.orm import Session

from agents.wire import HostFacts
from service.auth.models import Agent, EnrollmentToken
from service.auth.repository import (
    AuthRepository,
    credentials_by_token_hash,
    end_rotation_overlap,
)
from service.auth.token_cache import AgentTokenRecord, TokenCache
from service.auth.tokens import AGENT_TOKEN_PREFIX, ENROLLMENT_TOKEN_PREFIX, hash_token, new_token
from service.db import utcnow
from service.errors import ConflictError, ForbiddenError, NotFoundError, UnauthorizedError
from service.hosts import service as host_service
from service.hot_db import HotDB


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the admin, or an agent bound to one host."""

    is_admin: bool
    agent_id: int | None = None
    host_id: int | None = None
    #: The hash of the agent token the caller presented (a rotation needs to know which).
    token_hash: str | None = None
    #: The agent's host as enrolled (hostname, engine): an agent speaks for it only.
    hostname: str | None = None
    engine: str | None = None


ADMIN = Principal(is_admin=True)


class _PreviousToken(Protocol):
    @property
    def previous_token_hash(self) -> str | None: ...
    @property
    def previous_token_expires_at(self) -> datetime | None: ...


def _previous_token_valid(agent: _PreviousToken, now: datetime) -> bool:
    return (
        agent.previous_token_hash is not None
        and agent.previous_token_expires_at is not None
        and agent.previous_token_expires_at > now
    )


def _non_agent_token(token: str | None, admin_token: str) -> Principal | str:
    """The admin, a 401, or the agent token's hash to look up."""
    if not token:
        raise UnauthorizedError("missing bearer token (Authorization: Bearer <token>)")
    if hmac.compare_digest(token.encode(), admin_token.encode()):
        return ADMIN
    if not token.startswith(AGENT_TOKEN_PREFIX):
        raise UnauthorizedError("invalid token")
    return hash_token(token)


def check_agent_token(
    credentials: AgentTokenRecord | None, token_hash: str, now: datetime
) -> Principal:
    """The rules of an agent token: known, not revoked, current or in its rotation overlap."""
    if credentials is None:
        raise UnauthorizedError("invalid token")
    if credentials.revoked_at is not None:
        raise UnauthorizedError("this agent token was revoked")
    if credentials.token_hash != token_hash and not _previous_token_valid(credentials, now):
        raise UnauthorizedError("this agent token was replaced by a rotation; use the new token")
    return Principal(
        is_admin=False,
        agent_id=credentials.agent_id,
        host_id=credentials.host_id,
        token_hash=token_hash,
        hostname=credentials.hostname,
        engine=credentials.engine,
    )


def _ends_overlap(credentials: AgentTokenRecord, token_hash: str) -> bool:
    """The first use of the new token ends the previous one's overlap."""
    return credentials.token_hash == token_hash and credentials.previous_token_hash is not None


def authenticate(
    session: Session, token: str | None, *, admin_token: str, cache: TokenCache | None = None
) -> Principal:
    """The caller, read from the database (the admin routes and the console's agent
    routes); ``cache`` is told when an overlap ends here."""
    checked = _non_agent_token(token, admin_token)
    if isinstance(checked, Principal):
        return checked
    credentials = credentials_by_token_hash(session, checked)
    principal = check_agent_token(credentials, checked, utcnow())
    assert credentials is not None
    if _ends_overlap(credentials, checked):
        end_rotation_overlap(session, credentials.agent_id, checked)
        if cache is not None:
            cache.forget_agent(credentials.agent_id)
    return principal


async def authenticate_hot(
    hot_db: HotDB, token: str | None, *, admin_token: str, cache: TokenCache
) -> Principal:
    """The caller, from the token cache when it holds a fresh lookup (no database round
    trip), else from one query; the same rules as :func:`authenticate`."""
    checked = _non_agent_token(token, admin_token)
    if isinstance(checked, Principal):
        return checked
    credentials = cache.get(checked)
    if credentials is None:
        read_at = cache.now()
        credentials = await hot_db.run(lambda c: credentials_by_token_hash(c, checked))
        if credentials is not None:
            cache.put(checked, credentials, read_at=read_at)
    principal = check_agent_token(credentials, checked, utcnow())
    assert credentials is not None
    if _ends_overlap(credentials, checked):
        agent_id = credentials.agent_id
        await hot_db.run(lambda c: end_rotation_overlap(c, agent_id, checked))
        cache.forget_agent(agent_id)
    return principal


def create_enrollment_token(
    session: Session,
    *,
    description: str,
    max_uses: int,
    ttl_hours: float,
    hostname: str | None = None,
) -> tuple[EnrollmentToken, str]:
    token = new_token(ENROLLMENT_TOKEN_PREFIX)
    enrollment = EnrollmentToken(
        token_hash=hash_token(token),
        description=description,
        hostname=hostname,
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
    """Spend one use of ``enrollment_token`` and create an agent for ``host``.

    A host that is already enrolled is taken over only with a token scoped to its hostname
    (an admin's decision); its previous agents are then revoked. Any other token enrols new
    hosts only, so a leaked fleet token cannot take an existing host over.
    """
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
    if enrollment.hostname is not None and enrollment.hostname != host.hostname:
        raise ForbiddenError(
            f"this enrollment token enrols only {enrollment.hostname!r}, not {host.hostname!r}"
        )
    host_row, created = host_service.enroll_host(session, host)
    if not created:
        if enrollment.hostname is None:
            raise ConflictError(
                f"host {host.hostname!r} ({host.engine.value}) is already enrolled; to enrol "
                "it again, an admin creates an enrollment token scoped to this hostname "
                '(POST /v1/enrollment-tokens with "hostname")'
            )
        repository.revoke_host_agents(host_row.id, at=utcnow())
    enrollment.uses += 1
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
    session: Session, agent_id: int, *, principal: Principal, overlap: timedelta
) -> tuple[Agent, str]:
    """A new token for the agent, safe to retry; the token the agent holds keeps working
    for ``overlap`` or until the new one is first used.

    Serialised per agent (the row is locked). "Previous" is always the last token known to
    be in the agent's hands: rotating while a rotation's token has not been used yet (its
    answer was lost, or a concurrent rotation won) replaces that unused token and keeps the
    previous one, so concurrent rotations leave exactly one new token and a retried
    rotation with the old token recovers.
    """
    if not principal.is_admin and principal.agent_id != agent_id:
        raise ForbiddenError("an agent may rotate only its own token")
    repository = AuthRepository(session)
    agent = repository.get_agent(agent_id, for_update=True)
    if agent is None:
        raise NotFoundError(f"no agent with id {agent_id}")
    if agent.revoked_at is not None:
        raise ForbiddenError("a revoked agent cannot get a new token; enrol again")
    now = utcnow()
    pending = _previous_token_valid(agent, now)
    if principal.is_admin or principal.token_hash == agent.token_hash:
        if not pending:
            agent.previous_token_hash = agent.token_hash
    elif not (pending and principal.token_hash == agent.previous_token_hash):
        raise UnauthorizedError("this agent token was replaced by a rotation; use the new token")
    token = new_token(AGENT_TOKEN_PREFIX)
    agent.token_hash = hash_token(token)
    agent.token_prefix = token[:12]
    agent.previous_token_expires_at = now + overlap
    agent.rotated_at = now
    session.flush()
    return agent, token


def list_agents(session: Session, *, limit: int, offset: int) -> tuple[Sequence[Agent], int]:
    return AuthRepository(session).paginate_agents(limit=limit, offset=offset)
