from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from agents.wire import HOSTNAME_MAX_LENGTH
from service.auth.schemas import ENROLLMENT_DESCRIPTION_MAX_LENGTH
from service.db import Base, UTCDateTime, utcnow


class EnrollmentToken(Base):
    """A one-off (or few-use) secret an admin hands to an agent to enrol; stored hashed."""

    __tablename__ = "enrollment_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    description: Mapped[str] = mapped_column(String(ENROLLMENT_DESCRIPTION_MAX_LENGTH), default="")
    #: When set, the token enrols only this hostname, and may re-enrol it (docs/service.md).
    hostname: Mapped[str | None] = mapped_column(String(HOSTNAME_MAX_LENGTH), nullable=True)
    max_uses: Mapped[int] = mapped_column(Integer, default=1)
    uses: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class Agent(Base):
    """An enrolled agent: it may write its own host's reports and ask for recommendations."""

    __tablename__ = "agents"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"), index=True)
    enrollment_token_id: Mapped[int | None] = mapped_column(
        ForeignKey("enrollment_tokens.id", ondelete="SET NULL"), nullable=True
    )
    #: sha256 of the bearer token; the token itself is shown once, at enrolment or rotation.
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    token_prefix: Mapped[str] = mapped_column(String(16))
    #: The token before the last rotation: still accepted until ``previous_token_expires_at``
    #: or until the new token is first used, so a rotation whose answer was lost can be retried.
    previous_token_hash: Mapped[str | None] = mapped_column(String(64), unique=True, nullable=True)
    previous_token_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    rotated_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
