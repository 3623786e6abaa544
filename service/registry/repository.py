from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Row, func, select
from sqlalchemy.orm import Session

from service.registry.models import ModelVersion, PromotionEvent


class RegistryRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def get(self, version_id: int, *, for_update: bool = False) -> ModelVersion | None:
        query = select(ModelVersion).where(ModelVersion.id == version_id)
        if for_update:
            query = query.with_for_update()
        return self.session.scalars(query).one_or_none()

    def max_version(self, engine: str, name: str) -> int:
        return (
            self.session.scalar(
                select(func.max(ModelVersion.version)).where(
                    ModelVersion.engine == engine, ModelVersion.name == name
                )
            )
            or 0
        )

    def promoted(self, engine: str, *, for_update: bool = False) -> ModelVersion | None:
        query = select(ModelVersion).where(
            ModelVersion.engine == engine, ModelVersion.is_promoted.is_(True)
        )
        if for_update:
            query = query.with_for_update()
        return self.session.scalars(query).one_or_none()

    def promoted_pointer(self, engine: str) -> Row[int, str, int, str] | None:
        """The promoted version's id, name, number and sha256: one indexed, narrow query."""
        return self.session.execute(
            select(
                ModelVersion.id,
                ModelVersion.name,
                ModelVersion.version,
                ModelVersion.artifact_sha256,
            ).where(ModelVersion.engine == engine, ModelVersion.is_promoted.is_(True))
        ).first()

    def artifact(self, version_id: int) -> bytes | None:
        return self.session.scalar(
            select(ModelVersion.artifact).where(ModelVersion.id == version_id)
        )

    def add(self, obj: ModelVersion | PromotionEvent) -> None:
        self.session.add(obj)
        self.session.flush()

    def events(self, version_id: int) -> Sequence[PromotionEvent]:
        return self.session.scalars(
            select(PromotionEvent)
            .where(PromotionEvent.model_version_id == version_id)
            .order_by(PromotionEvent.id)
        ).all()

    def paginate(
        self, *, engine: str | None, name: str | None, limit: int, offset: int
    ) -> tuple[Sequence[ModelVersion], int]:
        query = select(ModelVersion)
        if engine is not None:
            query = query.where(ModelVersion.engine == engine)
        if name is not None:
            query = query.where(ModelVersion.name == name)
        total = self.session.scalar(select(func.count()).select_from(query.subquery())) or 0
        items = self.session.scalars(
            query.order_by(ModelVersion.id.desc()).limit(limit).offset(offset)
        )
        return items.all(), total
