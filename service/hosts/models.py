from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from agents.wire import ENGINE_VERSION_MAX_LENGTH, HOSTNAME_MAX_LENGTH
from service.db import Base, BigId, UTCDateTime, utcnow


class Host(Base):
    """A database host an agent tunes; one row per (hostname, engine)."""

    __tablename__ = "hosts"
    __table_args__ = (
        UniqueConstraint("hostname", "engine"),
        # Migration 0005: the engine filter newest first; report retention's "still named".
        Index("ix_hosts_engine_id", "engine", "id"),
        Index("ix_hosts_last_report_id", "last_report_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    hostname: Mapped[str] = mapped_column(String(HOSTNAME_MAX_LENGTH))
    engine: Mapped[str] = mapped_column(String(32), index=True)
    engine_version: Mapped[str] = mapped_column(String(ENGINE_VERSION_MAX_LENGTH))
    cpu_count: Mapped[int] = mapped_column(Integer)
    memory_bytes: Mapped[int] = mapped_column(BigInteger)
    #: The optimal tuple of the latest report (what the host runs after its last climb).
    current_tuple: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # No foreign key: hosts and reports would reference each other (a cycle SQLite cannot
    # migrate); reports are never deleted while their host lives.
    last_report_id: Mapped[int | None] = mapped_column(BigId, nullable=True)
    last_report_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)
