"""The console's tables (sessions, its signing secret) and the indexes its pages read by."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from service.db import Base, UTCDateTime, utcnow
from service.hosts.models import Host
from service.recommendations.models import RecommendationLog


class ConsoleSession(Base):
    """A signed-in console session; the cookie carries its id, signed (docs/console.md)."""

    __tablename__ = "console_sessions"

    #: sha256 of the session id in the cookie: the id itself is never stored.
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class ConsoleSecret(Base):
    """The server secret sessions are signed with when POOLTUNE_CONSOLE_SECRET is unset.

    Kept in the database, so every replica and every restart signs with the same one.
    """

    __tablename__ = "console_secrets"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    value: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


# The fleet sorts by last report; the host page lists a host's recommendations newest first.
Index("ix_hosts_last_report_at", Host.last_report_at)
Index("ix_recommendation_log_host_id_id", RecommendationLog.host_id, RecommendationLog.id)
