from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.auth.models import Agent, EnrollmentToken


class AuthRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def get_agent(self, agent_id: int) -> Agent | None:
        return self.session.get(Agent, agent_id)

    def get_agent_by_token_hash(self, token_hash: str) -> Agent | None:
        return self.session.scalars(
            select(Agent).where(Agent.token_hash == token_hash)
        ).one_or_none()

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
