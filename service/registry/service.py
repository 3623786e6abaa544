"""The model registry: numbered versions, artifacts with sha256, explicit recorded promotion.

The trainer calls :func:`register_version` and :func:`promote_version` directly with a
SQLAlchemy session on the service's database; like every service function they flush and
never commit, so the caller commits (``with sessionmaker.begin() as session: ...``).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from agents.knobs import Engine
from agents.wire import stored_text
from service.db import utcnow
from service.errors import ConflictError, InvalidInputError, NotFoundError
from service.recommendations.model_format import ArtifactError, artifact_sha256, load_predictor
from service.registry.models import ModelVersion, PromotionEvent
from service.registry.repository import RegistryRepository
from service.registry.schemas import MODEL_NAME_MAX_LENGTH

logger = logging.getLogger(__name__)

#: The metric promotion compares (lower is better): mean throughput regret on held-out data.
GATE_METRIC = "regret"
_REGISTER_ATTEMPTS = 8


class PromotionRejectedError(ConflictError):
    error = "promotion_rejected"


def _json_document(value: Mapping[str, Any], what: str) -> dict[str, Any]:
    try:
        return dict(json.loads(json.dumps(dict(value), allow_nan=False)))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what} must be JSON with finite numbers: {exc}") from exc


def register_version(
    session: Session,
    *,
    engine: Engine | str,
    name: str,
    artifact: bytes,
    metrics: Mapping[str, Any],
    training_summary: Mapping[str, Any],
    validate_artifact: bool = True,
) -> ModelVersion:
    """Store a new version of model ``name`` for ``engine``; its number is max + 1.

    Two trainers registering at once both try the same number; the unique constraint
    rejects one, which retries with the next number inside a savepoint.
    """
    engine = Engine(engine)
    if not name or len(name) > MODEL_NAME_MAX_LENGTH:
        raise InvalidInputError(f"model name must be 1 to {MODEL_NAME_MAX_LENGTH} characters")
    try:
        stored_text(name)
    except ValueError as exc:
        raise InvalidInputError(f"model name {exc}") from exc
    if validate_artifact:
        try:
            load_predictor(artifact, allow_pickle=True)
        except ArtifactError as exc:
            raise InvalidInputError(f"the artifact does not load: {exc}") from exc
    metrics_doc = _json_document(metrics, "metrics")
    summary_doc = _json_document(training_summary, "training_summary")
    repository = RegistryRepository(session)
    for _attempt in range(_REGISTER_ATTEMPTS):
        version = ModelVersion(
            engine=engine.value,
            name=name,
            version=repository.max_version(engine.value, name) + 1,
            artifact=artifact,
            artifact_sha256=artifact_sha256(artifact),
            artifact_size=len(artifact),
            metrics=metrics_doc,
            training_summary=summary_doc,
            is_promoted=False,
            created_at=utcnow(),
        )
        try:
            with session.begin_nested():
                session.add(version)
                session.flush()
        except IntegrityError:
            logger.info("version number taken, retrying", extra={"model": name})
            continue
        logger.info(
            "model version registered",
            extra={"engine": engine.value, "model": name, "version": version.version},
        )
        return version
    raise ConflictError(f"could not assign a version number to {name} after retries")


def _gate(candidate: ModelVersion, current: ModelVersion) -> None:
    # A damaged metrics column reads as no metrics: nothing to beat, or nothing to compare.
    new = candidate.metrics.get(GATE_METRIC) if isinstance(candidate.metrics, dict) else None
    old = current.metrics.get(GATE_METRIC) if isinstance(current.metrics, dict) else None
    if not isinstance(old, int | float) or not math.isfinite(old):
        return  # nothing to compare against
    if not isinstance(new, int | float) or not math.isfinite(new):
        raise PromotionRejectedError(
            f"version {candidate.id} has no '{GATE_METRIC}' metric while the promoted version "
            f"{current.id} has {old}; pass forced=true to promote anyway"
        )
    if new >= old:
        raise PromotionRejectedError(
            f"version {candidate.id} ({GATE_METRIC}={new}) does not beat the promoted version "
            f"{current.id} ({GATE_METRIC}={old}); pass forced=true to promote anyway"
        )


def promote_version(
    session: Session,
    version_id: int,
    *,
    reason: str,
    forced: bool = False,
    evaluated_by_caller: bool = False,
) -> ModelVersion:
    """Make ``version_id`` its engine's promoted model (replacing the current one).

    Unless ``forced``, the candidate must beat the current one on ``metrics["regret"]``
    (lower is better) when the current one has it. The trainer re-scores both versions on the
    same evaluation set before it promotes, which is a stricter gate than metrics recorded on
    different data: it passes ``evaluated_by_caller=True`` and says what it found in
    ``reason``. Every promotion is recorded.
    """
    repository = RegistryRepository(session)
    candidate = repository.get(version_id, for_update=True)
    if candidate is None:
        raise NotFoundError(f"no model version with id {version_id}")
    current = repository.promoted(candidate.engine, for_update=True)
    if current is not None and current.id == candidate.id:
        return candidate
    if current is not None and not forced and not evaluated_by_caller:
        _gate(candidate, current)
    try:
        with session.begin_nested():
            if current is not None:
                current.is_promoted = False
                session.flush()
            candidate.is_promoted = True
            candidate.promoted_at = utcnow()
            session.flush()
    except IntegrityError as exc:
        raise ConflictError(
            f"another promotion for {candidate.engine} happened at the same time; retry"
        ) from exc
    repository.add(
        PromotionEvent(
            model_version_id=candidate.id,
            action="promote",
            reason=reason,
            forced=forced,
            replaced_version_id=current.id if current is not None else None,
            created_at=utcnow(),
        )
    )
    logger.info(
        "model version promoted",
        extra={
            "engine": candidate.engine,
            "model": candidate.name,
            "version": candidate.version,
            "forced": forced,
            "replaced": current.id if current is not None else None,
        },
    )
    return candidate


def demote_version(session: Session, version_id: int, *, reason: str) -> ModelVersion:
    """Withdraw a promoted version: its engine answers from the heuristic until a promotion."""
    repository = RegistryRepository(session)
    version = repository.get(version_id, for_update=True)
    if version is None:
        raise NotFoundError(f"no model version with id {version_id}")
    if not version.is_promoted:
        raise ConflictError(f"model version {version_id} is not promoted")
    version.is_promoted = False
    repository.add(
        PromotionEvent(
            model_version_id=version.id,
            action="demote",
            reason=reason,
            forced=False,
            created_at=utcnow(),
        )
    )
    logger.info(
        "model version demoted",
        extra={"engine": version.engine, "model": version.name, "version": version.version},
    )
    return version


def get_version(session: Session, version_id: int) -> ModelVersion:
    version = RegistryRepository(session).get(version_id)
    if version is None:
        raise NotFoundError(f"no model version with id {version_id}")
    return version


def promotion_history(session: Session, version_id: int) -> Sequence[PromotionEvent]:
    return RegistryRepository(session).events(version_id)


def list_versions(
    session: Session, *, engine: str | None, name: str | None, limit: int, offset: int
) -> tuple[Sequence[ModelVersion], int]:
    return RegistryRepository(session).paginate(
        engine=engine, name=name, limit=limit, offset=offset
    )
