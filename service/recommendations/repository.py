from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session

from service.recommendations.models import RecommendationLog


class RecommendationLogRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def add(self, entry: RecommendationLog) -> None:
        self.session.add(entry)
        self.session.flush()

    def relax_durability(self) -> None:
        """Commit this transaction without waiting for the WAL flush (PostgreSQL only).

        A recommendation log row is advisory: losing the last few on a crash is acceptable,
        and skipping the fsync wait keeps recommendation latency low on a busy disk.
        """
        if self.session.get_bind().dialect.name == "postgresql":
            self.session.execute(text("SET LOCAL synchronous_commit = off"))
