from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from service.db import Base, UTCDateTime, utcnow
from service.registry.schemas import MODEL_NAME_MAX_LENGTH


class ModelVersion(Base):
    """A trained model's artifact and what is known about it; at most one promoted per engine."""

    __tablename__ = "model_versions"
    __table_args__ = (
        UniqueConstraint("engine", "name", "version"),
        Index("ix_model_versions_name", "name"),  # ?name= without an engine (0005)
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    engine: Mapped[str] = mapped_column(String(32))
    name: Mapped[str] = mapped_column(String(MODEL_NAME_MAX_LENGTH))
    version: Mapped[int] = mapped_column(Integer)
    artifact: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)
    artifact_sha256: Mapped[str] = mapped_column(String(64))
    artifact_size: Mapped[int] = mapped_column(Integer)
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON)
    training_summary: Mapped[dict[str, Any]] = mapped_column(JSON)
    is_promoted: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    promoted_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class PromotionEvent(Base):
    """Promotion is an explicit, recorded act: who/why/when, and whether the gate was forced."""

    __tablename__ = "promotion_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    model_version_id: Mapped[int] = mapped_column(
        ForeignKey("model_versions.id", ondelete="CASCADE"), index=True
    )
    action: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text, default="")
    forced: Mapped[bool] = mapped_column(Boolean, default=False)
    replaced_version_id: Mapped[int | None] = mapped_column(
        ForeignKey("model_versions.id", ondelete="SET NULL"), nullable=True
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


# One promoted version per engine, enforced by the database (a partial unique index).
Index(
    "uq_model_versions_promoted_engine",
    ModelVersion.engine,
    unique=True,
    postgresql_where=text("is_promoted"),
    sqlite_where=text("is_promoted"),
)
