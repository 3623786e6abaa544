"""The console's reads: narrow, indexed queries, one page of rows at a time.

The fleet list joins each host to its latest report by primary key (``hosts.last_report_id``)
and never loads a trace; per-row extras (the newest approval request, the newest
recommendation) are fetched for the page's hosts only.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Row, and_, exists, func, not_, select
from sqlalchemy.orm import Session, aliased

from service.approvals.models import Approval, ApprovalState
from service.auth.models import Agent
from service.hosts.models import Host
from service.recommendations.models import RecommendationLog
from service.registry.models import ModelVersion, PromotionEvent
from service.reports.models import Report


class FleetSort(enum.StrEnum):
    HOSTNAME = "hostname"
    ENGINE = "engine"
    CORES = "cores"
    GAIN = "gain"
    AGE = "age"


class FleetKind(enum.StrEnum):
    """Enrolled hosts (an agent), dataset workloads imported for training, or both."""

    ENROLLED = "enrolled"
    DATASET = "dataset"
    ALL = "all"


@dataclass(frozen=True, slots=True)
class FleetFilter:
    engine: str | None = None
    search: str = ""
    kind: FleetKind = FleetKind.ENROLLED
    pending_only: bool = False
    sort: FleetSort = FleetSort.HOSTNAME
    descending: bool = False
    limit: int = 50
    offset: int = 0


_last = aliased(Report)
_GAIN = _last.throughput_optimal / func.nullif(_last.throughput_start, 0.0)
_HAS_AGENT = exists().where(Agent.host_id == Host.id)
_PENDING = exists().where(
    Approval.host_id == Host.id, Approval.state == ApprovalState.PENDING.value
)


def _like_pattern(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _fleet_conditions(fleet: FleetFilter) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = []
    if fleet.engine:
        conditions.append(Host.engine == fleet.engine)
    if fleet.search:
        conditions.append(Host.hostname.ilike(_like_pattern(fleet.search), escape="\\"))
    if fleet.kind is FleetKind.ENROLLED:
        conditions.append(_HAS_AGENT)
    elif fleet.kind is FleetKind.DATASET:
        conditions.append(not_(_HAS_AGENT))
    if fleet.pending_only:
        conditions.append(_PENDING)
    return conditions


def _fleet_order(fleet: FleetFilter) -> list[Any]:
    column: Any = {
        FleetSort.HOSTNAME: Host.hostname,
        FleetSort.ENGINE: Host.engine,
        FleetSort.CORES: Host.cpu_count,
        FleetSort.GAIN: _GAIN,
        # "age" ascending is the freshest report first.
        FleetSort.AGE: Host.last_report_at,
    }[fleet.sort]
    descending = fleet.descending != (fleet.sort is FleetSort.AGE)
    ordered = column.desc() if descending else column.asc()
    if fleet.sort in (FleetSort.GAIN, FleetSort.AGE):
        ordered = ordered.nulls_last()
    tie = Host.hostname if fleet.sort is not FleetSort.HOSTNAME else Host.engine
    return [ordered, tie.asc(), Host.id.asc()]


def fleet_page(session: Session, fleet: FleetFilter) -> tuple[Sequence[Row[Any]], int]:
    """One page of hosts with their latest report's figures, and the filtered total."""
    conditions = _fleet_conditions(fleet)
    total = session.scalar(select(func.count()).select_from(Host).where(*conditions)) or 0
    query = (
        select(
            Host.id,
            Host.hostname,
            Host.engine,
            Host.cpu_count,
            Host.current_tuple,
            Host.last_report_at,
            _last.start_source,
            _last.throughput_start,
            _last.throughput_optimal,
            _last.converged,
            _GAIN.label("gain"),
            _HAS_AGENT.label("has_agent"),
        )
        .outerjoin(_last, _last.id == Host.last_report_id)
        .where(*conditions)
        .order_by(*_fleet_order(fleet))
        .limit(fleet.limit)
        .offset(fleet.offset)
    )
    return session.execute(query).all(), total


def fleet_counts(session: Session) -> dict[str, int]:
    """Hosts per kind and pending requests: the fleet page's header."""
    enrolled = session.scalar(select(func.count()).select_from(Host).where(_HAS_AGENT)) or 0
    every = session.scalar(select(func.count()).select_from(Host)) or 0
    return {
        "enrolled": enrolled,
        "dataset": every - enrolled,
        "all": every,
        "pending": pending_approvals(session),
    }


def pending_approvals(session: Session) -> int:
    """Requests waiting for an admin (the nav's badge and the fleet page's header)."""
    pending = select(func.count()).select_from(Approval)
    return session.scalar(pending.where(Approval.state == ApprovalState.PENDING.value)) or 0


def latest_recommendations(session: Session, host_ids: Sequence[int]) -> dict[int, Any]:
    """The newest recommendation each host received (for its predicted gain)."""
    if not host_ids:
        return {}
    newest = (
        select(func.max(RecommendationLog.id))
        .where(RecommendationLog.host_id.in_(host_ids))
        .group_by(RecommendationLog.host_id)
    )
    rows: Sequence[Any] = session.execute(
        select(
            RecommendationLog.host_id,
            RecommendationLog.source,
            RecommendationLog.predicted_gain,
            RecommendationLog.predicted_gain_low,
            RecommendationLog.predicted_gain_high,
        ).where(RecommendationLog.id.in_(newest))
    ).all()
    return {int(row.host_id): row for row in rows}


def host_agents(session: Session, host_id: int) -> Sequence[Agent]:
    return session.scalars(select(Agent).where(Agent.host_id == host_id).order_by(Agent.id)).all()


def host_report(session: Session, host_id: int, report_id: int | None) -> Report | None:
    """The report a host page shows: the one asked for (if the host's), else the latest."""
    if report_id is None:
        return session.scalars(
            select(Report)
            .where(Report.host_id == host_id)
            .order_by(Report.received_at.desc(), Report.id.desc())
            .limit(1)
        ).first()
    return session.scalars(
        select(Report).where(and_(Report.id == report_id, Report.host_id == host_id))
    ).first()


def host_reports(
    session: Session, host_id: int, *, limit: int, offset: int
) -> tuple[Sequence[Row[Any]], int]:
    """A page of the host's reports, newest first, without profiles and traces."""
    total = (
        session.scalar(select(func.count()).select_from(Report).where(Report.host_id == host_id))
        or 0
    )
    rows = session.execute(
        select(
            Report.id,
            Report.received_at,
            Report.finished_at,
            Report.converged,
            Report.start_source,
            Report.start_tuple,
            Report.optimal_tuple,
            Report.throughput_start,
            Report.throughput_optimal,
            Report.trace_samples,
            Report.climber,
        )
        .where(Report.host_id == host_id)
        .order_by(Report.received_at.desc(), Report.id.desc())
        .limit(limit)
        .offset(offset)
    ).all()
    return rows, total


def host_recommendations(session: Session, host_id: int, *, limit: int) -> Sequence[Row[Any]]:
    return session.execute(
        select(
            RecommendationLog.id,
            RecommendationLog.created_at,
            RecommendationLog.source,
            RecommendationLog.model_version,
            RecommendationLog.start_tuple,
            RecommendationLog.ranges,
            RecommendationLog.predicted_gain,
            RecommendationLog.predicted_gain_low,
            RecommendationLog.predicted_gain_high,
            RecommendationLog.fallback_reason,
        )
        .where(RecommendationLog.host_id == host_id)
        .order_by(RecommendationLog.id.desc())
        .limit(limit)
    ).all()


def host_approvals(session: Session, host_id: int, *, limit: int) -> Sequence[Approval]:
    return session.scalars(
        select(Approval)
        .where(Approval.host_id == host_id)
        .order_by(Approval.id.desc())
        .limit(limit)
    ).all()


def hostnames(session: Session, host_ids: Sequence[int]) -> dict[int, str]:
    if not host_ids:
        return {}
    rows = session.execute(select(Host.id, Host.hostname).where(Host.id.in_(host_ids))).all()
    return {row.id: row.hostname for row in rows}


def model_versions(
    session: Session, *, engine: str | None, limit: int, offset: int
) -> tuple[Sequence[ModelVersion], int]:
    """Versions, by engine then newest first (the artifact column stays deferred)."""
    query = select(ModelVersion)
    if engine:
        query = query.where(ModelVersion.engine == engine)
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    items = session.scalars(
        query.order_by(ModelVersion.engine, ModelVersion.id.desc()).limit(limit).offset(offset)
    ).all()
    return items, total


def promotion_audit(
    session: Session, *, version_id: int | None, limit: int, offset: int
) -> tuple[Sequence[Any], int]:
    """Promotions and demotions, newest first, with the version they concern."""
    conditions = [] if version_id is None else [PromotionEvent.model_version_id == version_id]
    total = session.scalar(select(func.count()).select_from(PromotionEvent).where(*conditions)) or 0
    rows: Sequence[Any] = session.execute(
        select(
            PromotionEvent.id,
            PromotionEvent.created_at,
            PromotionEvent.action,
            PromotionEvent.reason,
            PromotionEvent.forced,
            PromotionEvent.replaced_version_id,
            PromotionEvent.model_version_id,
            ModelVersion.engine,
            ModelVersion.name,
            ModelVersion.version,
        )
        .join(ModelVersion, ModelVersion.id == PromotionEvent.model_version_id)
        .where(*conditions)
        .order_by(PromotionEvent.id.desc())
        .limit(limit)
        .offset(offset)
    ).all()
    return rows, total
