from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from agents.wire import IDEMPOTENCY_KEY_MAX_LENGTH, MODEL_VERSION_MAX_LENGTH, ApprovalState
from service.db import Base, BigId, UTCDateTime, utcnow

__all__ = ["Approval", "ApprovalState"]


class Approval(Base):
    """An agent in approval mode asks before it applies a start tuple and climbs.

    The request is persisted, so agent and service restarts lose nothing: the agent keeps its
    ``idempotency_key`` and polls the same row until it is decided or expires.
    """

    __tablename__ = "approvals"
    __table_args__ = (
        Index("ix_approvals_state_id", "state", "id"),
        Index("ix_approvals_host_id_id", "host_id", "id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    idempotency_key: Mapped[str] = mapped_column(String(IDEMPOTENCY_KEY_MAX_LENGTH), unique=True)
    #: sha256 of the canonical request: tells a retry from a reused key.
    request_sha256: Mapped[str] = mapped_column(String(64))
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    agent_id: Mapped[int | None] = mapped_column(
        ForeignKey("agents.id", ondelete="SET NULL"), nullable=True
    )
    engine: Mapped[str] = mapped_column(String(32))
    state: Mapped[str] = mapped_column(String(16), default=ApprovalState.PENDING.value)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    #: Who decided: "admin" (the API's admin token), "console", or "expiry" / "agent".
    decided_by: Mapped[str | None] = mapped_column(String(32), nullable=True)
    reason: Mapped[str] = mapped_column(Text, default="")
    profile: Mapped[dict[str, Any]] = mapped_column(JSON)
    #: Knob values the server runs now (as the agent read them), if it said.
    current_tuple: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    recommended_tuple: Mapped[dict[str, Any]] = mapped_column(JSON)
    ranges: Mapped[dict[str, Any]] = mapped_column(JSON)
    source: Mapped[str] = mapped_column(String(32))
    model_version: Mapped[str | None] = mapped_column(
        String(MODEL_VERSION_MAX_LENGTH), nullable=True
    )
    predicted_gain: Mapped[float | None] = mapped_column(Float, nullable=True)
    predicted_gain_low: Mapped[float | None] = mapped_column(Float, nullable=True)
    predicted_gain_high: Mapped[float | None] = mapped_column(Float, nullable=True)
    #: What the agent may apply once approved: the recommendation, or the admin's edit of it.
    approved_tuple: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    edited: Mapped[bool] = mapped_column(Boolean, default=False)
    #: Seconds the agent asked to wait at most (the service caps it).
    ttl_s: Mapped[int] = mapped_column(Integer)
