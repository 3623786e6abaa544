"""Approval requests: created by agents in approval mode, decided by an admin, or expired.

A request is idempotent on its key (an agent that restarts asks again with the same key and
gets the same row), a newer request of the same host supersedes an undecided older one, and
expiry is applied by one indexed UPDATE whenever requests are read or decided, so no
background job is needed. Docs: docs/console.md, "Approval mode".
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import ValidationError
from sqlalchemy.orm import Session

from agents.wire import KnobTuple
from service.approvals.models import Approval, ApprovalState
from service.approvals.repository import ApprovalRepository
from service.approvals.schemas import ApprovalCreate, ApprovalRead, PredictedGain
from service.db import utcnow
from service.errors import ConflictError, InvalidInputError, NotFoundError
from service.hosts import service as host_service

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CreateResult:
    approval: Approval
    created: bool


def request_sha256(body: ApprovalCreate) -> str:
    return hashlib.sha256(body.model_dump_json().encode()).hexdigest()


def create_approval(
    session: Session,
    body: ApprovalCreate,
    *,
    agent_id: int | None,
    host_id: int,
    max_ttl_s: int,
    now: datetime | None = None,
) -> CreateResult:
    """Store the agent's request once; a retry with the same key answers the stored row."""
    now = now or utcnow()
    host = host_service.get_host(session, host_id)
    engine = body.recommendation.start_tuple.engine
    if engine.value != host.engine:
        raise InvalidInputError(
            f"recommendation.start_tuple.engine ({engine.value}) is not this host's engine "
            f"({host.engine})"
        )
    if body.current_tuple is not None and body.current_tuple.engine != engine:
        raise InvalidInputError("current_tuple.engine must match the recommendation's engine")
    repository = ApprovalRepository(session)
    repository.expire_due(now)
    digest = request_sha256(body)
    existing = repository.get_by_key(body.idempotency_key)
    if existing is None:
        ttl_s = min(body.ttl_s or max_ttl_s, max_ttl_s)
        gain = body.predicted_gain
        new_id = repository.insert_if_new(
            {
                "idempotency_key": body.idempotency_key,
                "request_sha256": digest,
                "host_id": host.id,
                "agent_id": agent_id,
                "engine": engine.value,
                "state": ApprovalState.PENDING.value,
                "created_at": now,
                "expires_at": now + timedelta(seconds=ttl_s),
                "reason": "",
                "profile": body.profile.model_dump(mode="json"),
                "current_tuple": dict(body.current_tuple.values) if body.current_tuple else None,
                "recommended_tuple": dict(body.recommendation.start_tuple.values),
                "ranges": {name: [r.low, r.high] for name, r in body.recommendation.ranges.items()},
                "source": body.recommendation.source.value,
                "model_version": body.recommendation.model_version,
                "predicted_gain": gain.estimate if gain else None,
                "predicted_gain_low": gain.low if gain else None,
                "predicted_gain_high": gain.high if gain else None,
                "edited": False,
                "ttl_s": ttl_s,
            }
        )
        if new_id is not None:
            repository.supersede_pending(host.id, except_id=new_id, now=now)
            stored = repository.get(new_id)
            assert stored is not None
            logger.info(
                "approval requested",
                extra={"approval_id": stored.id, "host_id": host.id, "ttl_s": ttl_s},
            )
            return CreateResult(stored, created=True)
        existing = repository.get_by_key(body.idempotency_key)
        assert existing is not None  # the conflicting insert has committed
    if existing.request_sha256 != digest or existing.host_id != host.id:
        raise ConflictError(
            f"idempotency_key {body.idempotency_key!r} was already used for a different "
            "approval request; use a new key per request"
        )
    return CreateResult(existing, created=False)


def _pending(session: Session, approval_id: int, now: datetime) -> Approval:
    repository = ApprovalRepository(session)
    repository.expire_due(now)
    approval = repository.get(approval_id, for_update=True)
    if approval is None:
        raise NotFoundError(f"no approval request with id {approval_id}")
    if approval.state != ApprovalState.PENDING.value:
        raise ConflictError(
            f"approval request {approval_id} is {approval.state}; only a pending request "
            "can be decided"
        )
    return approval


def checked_values(engine: str, values: dict[str, int]) -> dict[str, int]:
    """``values`` if every knob is the engine's and inside its bounds, else a 422 naming it."""
    try:
        return dict(KnobTuple.model_validate({"engine": engine, "values": values}).values)
    except ValidationError as exc:
        messages = "; ".join(error["msg"].removeprefix("Value error, ") for error in exc.errors())
        raise InvalidInputError(f"values: {messages}") from exc


def approve(
    session: Session,
    approval_id: int,
    *,
    values: dict[str, int] | None,
    reason: str,
    actor: str,
    now: datetime | None = None,
) -> Approval:
    """Approve a pending request, with ``values`` replacing the recommendation if given."""
    now = now or utcnow()
    approval = _pending(session, approval_id, now)
    chosen = checked_values(approval.engine, values if values else approval.recommended_tuple)
    approval.state = ApprovalState.APPROVED.value
    approval.approved_tuple = chosen
    approval.edited = chosen != approval.recommended_tuple
    approval.decided_at = now
    approval.decided_by = actor
    approval.reason = reason
    session.flush()
    logger.info(
        "approval approved",
        extra={"approval_id": approval.id, "edited": approval.edited, "actor": actor},
    )
    return approval


def reject(
    session: Session, approval_id: int, *, reason: str, actor: str, now: datetime | None = None
) -> Approval:
    """Reject a pending request: the agent leaves the tuple as it is."""
    now = now or utcnow()
    approval = _pending(session, approval_id, now)
    approval.state = ApprovalState.REJECTED.value
    approval.decided_at = now
    approval.decided_by = actor
    approval.reason = reason
    session.flush()
    logger.info("approval rejected", extra={"approval_id": approval.id, "actor": actor})
    return approval


def get_approval(
    session: Session, approval_id: int, *, host_id: int | None, now: datetime | None = None
) -> Approval:
    """One request; with ``host_id`` (an agent asking) only that host's requests exist."""
    repository = ApprovalRepository(session)
    repository.expire_due(now or utcnow())
    approval = repository.get(approval_id)
    if approval is None or (host_id is not None and approval.host_id != host_id):
        raise NotFoundError(f"no approval request with id {approval_id}")
    return approval


def list_approvals(
    session: Session,
    *,
    state: ApprovalState | None,
    host_id: int | None,
    limit: int,
    offset: int,
    now: datetime | None = None,
) -> tuple[Sequence[Approval], int]:
    repository = ApprovalRepository(session)
    repository.expire_due(now or utcnow())
    return repository.paginate(
        state=state.value if state else None, host_id=host_id, limit=limit, offset=offset
    )


def latest_per_host(session: Session, host_ids: Sequence[int]) -> dict[int, Approval]:
    return ApprovalRepository(session).latest_per_host(host_ids)


def predicted_gain(approval: Approval) -> PredictedGain | None:
    if approval.predicted_gain is None:
        return None
    estimate = approval.predicted_gain
    return PredictedGain(
        estimate=estimate,
        low=approval.predicted_gain_low if approval.predicted_gain_low is not None else estimate,
        high=approval.predicted_gain_high if approval.predicted_gain_high is not None else estimate,
    )


def to_read(approval: Approval) -> ApprovalRead:
    return ApprovalRead(
        id=approval.id,
        idempotency_key=approval.idempotency_key,
        host_id=approval.host_id,
        agent_id=approval.agent_id,
        engine=approval.engine,
        state=approval.state,
        created_at=approval.created_at,
        expires_at=approval.expires_at,
        decided_at=approval.decided_at,
        decided_by=approval.decided_by,
        reason=approval.reason,
        current_tuple=approval.current_tuple,
        recommended_tuple=approval.recommended_tuple,
        ranges=approval.ranges,
        source=approval.source,
        model_version=approval.model_version,
        predicted_gain=predicted_gain(approval),
        approved_tuple=approval.approved_tuple,
        edited=approval.edited,
    )
