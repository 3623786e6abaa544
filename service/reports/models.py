from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
)
from sqlalchemy.orm import Mapped, mapped_column

from agents.wire import IDEMPOTENCY_KEY_MAX_LENGTH, MODEL_VERSION_MAX_LENGTH
from service.db import Base, BigId, UTCDateTime, utcnow


class Report(Base):
    """One climb report. The idempotency key is unique: a retried upload stores nothing new."""

    __tablename__ = "reports"
    __table_args__ = (
        Index("ix_reports_host_id_received_at", "host_id", "received_at"),
        # Migration 0005: the list and filter routes, newest first (docs/service.md).
        Index("ix_reports_host_id_id", "host_id", "id"),
        Index("ix_reports_engine_id", "engine", "id"),
        Index("ix_reports_finished_at", "finished_at"),
        Index("ix_reports_host_id_finished_at_id", "host_id", "finished_at", "id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    idempotency_key: Mapped[str] = mapped_column(String(IDEMPOTENCY_KEY_MAX_LENGTH), unique=True)
    #: sha256 of the canonical JSON of the report: tells a retry from a reused key.
    payload_sha256: Mapped[str] = mapped_column(String(64))
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    agent_id: Mapped[int | None] = mapped_column(
        ForeignKey("agents.id", ondelete="SET NULL"), nullable=True
    )
    engine: Mapped[str] = mapped_column(String(32), index=True)
    schema_version: Mapped[int] = mapped_column(Integer)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime] = mapped_column(UTCDateTime)
    converged: Mapped[bool] = mapped_column(Boolean, index=True)
    samples_to_converge: Mapped[int | None] = mapped_column(Integer, nullable=True)
    start_source: Mapped[str] = mapped_column(String(32))
    start_model_version: Mapped[str | None] = mapped_column(
        String(MODEL_VERSION_MAX_LENGTH), nullable=True
    )
    host_facts: Mapped[dict[str, Any]] = mapped_column(JSON)
    profile: Mapped[dict[str, Any]] = mapped_column(JSON)
    start_tuple: Mapped[dict[str, Any]] = mapped_column(JSON)
    optimal_tuple: Mapped[dict[str, Any]] = mapped_column(JSON)
    default_tuple: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    throughput_start: Mapped[float] = mapped_column(Float)
    throughput_optimal: Mapped[float] = mapped_column(Float)
    throughput_default: Mapped[float | None] = mapped_column(Float, nullable=True)
    climber: Mapped[dict[str, Any]] = mapped_column(JSON)
    trace_samples: Mapped[int] = mapped_column(Integer)
    #: zlib-compressed JSON list of trace samples (see service.reports.trace_codec).
    trace: Mapped[bytes] = mapped_column(LargeBinary)
