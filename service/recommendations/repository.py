from __future__ import annotations

from sqlalchemy.orm import Session

from service.recommendations.models import RecommendationLog


class RecommendationLogRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def add(self, entry: RecommendationLog) -> None:
        self.session.add(entry)
        self.session.flush()
