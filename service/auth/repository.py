from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Update, func, or_, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from service.auth.models import Agent, EnrollmentToken
from service.auth.token_cache import AgentTokenRecord
from service.hosts.models import Host


def _end_overlap_statement(agent_id: int, token_hash: str) -> Update:
    return (
        update(Agent)
        .where(Agent.id == agent_id, Agent.token_hash == token_hash)
        .values(previous_token_hash=None, previous_token_expires_at=None)
        .execution_options(synchronize_session=False)
    )


def credentials_by_token_hash(
    connection: Connection | Session, token_hash: str
) -> AgentTokenRecord | None:
    """The agent whose current or previous token has this hash, with its host's identity:
    one query (the unique indexes on both hashes)."""
    query = (
        select(
            Agent.id,
            Agent.host_id,
            Host.hostname,
            Host.engine,
            Agent.token_hash,
            Agent.previous_token_hash,
            Agent.previous_token_expires_at,
            Agent.revoked_at,
        )
        .join(Host, Host.id == Agent.host_id)
        .where(or_(Agent.token_hash == token_hash, Agent.previous_token_hash == token_hash))
    )
    row = connection.execute(query).one_or_none()
    if row is None:
        return None
    return AgentTokenRecord(*row)


def end_rotation_overlap(connection: Connection | Session, agent_id: int, token_hash: str) -> None:
    """The new token was used: the previous one stops working now."""
    connection.execute(_end_overlap_statement(agent_id, token_hash))


class AuthRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def get_agent(self, agent_id: int, *, for_update: bool = False) -> Agent | None:
        if not for_update:
            return self.session.get(Agent, agent_id)
        # FOR UPDATE serialises rotations of one agent; populate_existing re-reads a row the
        # session already holds (authentication loaded it before the lock was taken).
        return self.session.scalars(
            select(Agent)
            .where(Agent.id == agent_id)
            .with_for_update()
            .execution_options(populate_existing=True)
        ).one_or_none()

    def revoke_host_agents(self, host_id: int, *, at: datetime) -> None:
        self.session.execute(
            update(Agent)
            .where(Agent.host_id == host_id, Agent.revoked_at.is_(None))
            .values(revoked_at=at)
            .execution_options(synchronize_session=False)
        )

    def get_enrollment_token(self, token_id: int) -> EnrollmentToken | None:
        return self.session.get(EnrollmentToken, token_id)

    def get_enrollment_token_by_hash(self, token_hash: str) -> EnrollmentToken | None:
        # FOR UPDATE: concurrent enrolments with one token must not both pass max_uses.
        return self.session.scalars(
            select(EnrollmentToken)
            .where(EnrollmentToken.token_hash == token_hash)
            .with_for_update()
        ).one_or_none()

    def add(self, obj: Agent | EnrollmentToken) -> None:
        self.session.add(obj)
        self.session.flush()

    def paginate_agents(self, *, limit: int, offset: int) -> tuple[Sequence[Agent], int]:
        total = self.session.scalar(select(func.count()).select_from(Agent)) or 0
        items = self.session.scalars(
            select(Agent).order_by(Agent.id.desc()).limit(limit).offset(offset)
        )
        return items.all(), total
