from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Float, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from agents.wire import MODEL_VERSION_MAX_LENGTH
from service.db import Base, BigId, UTCDateTime, utcnow


class RecommendationLog(Base):
    """Every answer given, with the model that gave it: the trainer evaluates from these."""

    __tablename__ = "recommendation_log"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
    engine: Mapped[str] = mapped_column(String(32), index=True)
    host_id: Mapped[int | None] = mapped_column(
        ForeignKey("hosts.id", ondelete="SET NULL"), nullable=True
    )
    agent_id: Mapped[int | None] = mapped_column(
        ForeignKey("agents.id", ondelete="SET NULL"), nullable=True
    )
    source: Mapped[str] = mapped_column(String(32))
    model_version_id: Mapped[int | None] = mapped_column(
        ForeignKey("model_versions.id", ondelete="SET NULL"), nullable=True
    )
    model_version: Mapped[str | None] = mapped_column(
        String(MODEL_VERSION_MAX_LENGTH), nullable=True
    )
    host_facts: Mapped[dict[str, Any]] = mapped_column(JSON)
    profile: Mapped[dict[str, Any]] = mapped_column(JSON)
    start_tuple: Mapped[dict[str, Any]] = mapped_column(JSON)
    ranges: Mapped[dict[str, Any]] = mapped_column(JSON)
    #: Predicted throughput at start_tuple / at the host's current tuple, with its interval,
    #: when the answering model predicts it (docs/console.md, "Predicted gain").
    predicted_gain: Mapped[float | None] = mapped_column(Float, nullable=True)
    predicted_gain_low: Mapped[float | None] = mapped_column(Float, nullable=True)
    predicted_gain_high: Mapped[float | None] = mapped_column(Float, nullable=True)
    #: Why the heuristic answered although a model was promoted (load or predict failure).
    fallback_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
