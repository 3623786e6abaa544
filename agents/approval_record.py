"""The approval record: ``state_dir/approval.json``, what an agent in approve or recommend mode
asked and what became of it (docs/agent.md, "Modes"). Written atomically before the first
POST, so a restarted agent finds the same request; read by ``pooltune-agent status``."""

from __future__ import annotations

import enum
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, ValidationError

from agents.config import Mode
from agents.state import atomic_write_text
from agents.wire import ApprovalCreate

logger = logging.getLogger(__name__)

RECORD_FORMAT: Literal[1] = 1


class RecordState(enum.StrEnum):
    """Where the agent's request stands, as the agent knows it."""

    #: Written before the first POST; a restarted agent posts it again with the same key.
    UNSENT = "unsent"
    PENDING = "pending"
    #: Approved, not applied yet (a restart applies it).
    APPROVED = "approved"
    #: Applied and climbed from: used up; the next start asks again.
    APPLIED = "applied"
    REJECTED = "rejected"
    #: The service expired it, or the agent's own ``wait_max_s`` passed without a decision.
    EXPIRED = "expired"
    SUPERSEDED = "superseded"
    #: The service refused the request itself (a 4xx): nothing to wait for.
    REFUSED = "refused"
    #: ``mode = "recommend"``: reported, never applied.
    RECOMMENDED = "recommended"


WAITING = frozenset({RecordState.UNSENT, RecordState.PENDING})
NOTHING_DONE = frozenset(
    {RecordState.REJECTED, RecordState.EXPIRED, RecordState.SUPERSEDED, RecordState.REFUSED}
)


class GateRecord(BaseModel):
    """The content of ``approval.json``: the request as posted and what became of it."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    format: Literal[1] = RECORD_FORMAT
    mode: Mode
    state: RecordState
    #: Exactly the body posted (and posted again after a restart: same key, same body).
    request: ApprovalCreate
    requested_at: AwareDatetime
    #: The agent's own bound: no decision by then means doing nothing.
    deadline: AwareDatetime | None = None
    approval_id: int | None = None
    #: The service's deadline, once it answered.
    expires_at: AwareDatetime | None = None
    decided_at: AwareDatetime | None = None
    decided_by: str | None = None
    reason: str = ""
    approved_tuple: dict[str, int] | None = None
    edited: bool = False
    #: Approved values the agent's bounds changed: ``knob: [approved, applied]``.
    clipped: dict[str, list[int]] = {}
    applied_tuple: dict[str, int] | None = None
    #: Nothing changes (no new request) before this time.
    idle_until: AwareDatetime | None = None
    last_error: str = ""


class GateFile:
    """``approval.json``, written atomically; a damaged file is reported and ignored (the
    agent then asks afresh, which supersedes the old request on the service)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def save(self, record: GateRecord) -> None:
        atomic_write_text(self.path, record.model_dump_json(indent=2) + "\n")

    def load(self) -> GateRecord | None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            logger.error("cannot read %s (%s): asking afresh", self.path, exc)
            return None
        try:
            return GateRecord.model_validate_json(text)
        except ValidationError as exc:
            logger.error("%s is damaged or of another format (%s): asking afresh", self.path, exc)
            return None


def stamp(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def record_summary(record: GateRecord) -> dict[str, Any]:
    """A record as the status document shows it."""
    proposal = record.request.recommendation
    summary: dict[str, Any] = {
        "mode": record.mode.value,
        "state": record.state.value,
        "id": record.approval_id,
        "idempotency_key": record.request.idempotency_key,
        "requested_at": record.requested_at.isoformat(),
        "would_apply": proposal.start_tuple.values,
        "current_tuple": record.request.current_tuple.values
        if record.request.current_tuple
        else None,
        "source": proposal.source.value,
        "model_version": proposal.model_version,
    }
    optional = {
        "deadline": record.deadline,
        "expires_at": record.expires_at,
        "decided_at": record.decided_at,
        "decided_by": record.decided_by,
        "reason": record.reason,
        "approved_tuple": record.approved_tuple,
        "edited": record.edited or None,
        "clipped": record.clipped,
        "applied_tuple": record.applied_tuple,
        "idle_until": record.idle_until,
        "last_error": record.last_error,
    }
    for key, value in optional.items():
        if value:
            summary[key] = value.isoformat() if isinstance(value, datetime) else value
    return summary


def read_record_summary(path: Path) -> dict[str, Any] | None:
    """The record in ``path`` for ``pooltune-agent status`` (None when there is none)."""
    record = GateFile(path).load()
    return record_summary(record) if record is not None else None
