"""Model versions in the service's registry, as the trainer acts on them: register a trained
model, re-score a version on the current data, promote one through the gate, and tell
whether an engine's promoted version still loads.

The functions take a session on the service's database and flush, never commit (as the
service's own functions do); the CLI commits.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.orm import Session

from agents.knobs import Engine
from service.recommendations.predictor import ArtifactError
from service.recommendations.tuple_model import TupleModel
from service.registry import service as registry
from service.registry.models import ModelVersion
from service.registry.repository import RegistryRepository
from trainer.artifact import artifact_bytes
from trainer.evaluation import Score, baseline_predictors, evaluate
from trainer.examples import holdout_split
from trainer.pipeline import GateDecision, NotEnoughDataError, TrainOutcome, promotion_gate
from trainer.sources.database import read_examples

logger = logging.getLogger(__name__)


class GateRefusedError(Exception):
    """The gate refused the candidate (and promotion was not forced)."""

    def __init__(self, decision: GateDecision) -> None:
        super().__init__(decision.reason)
        self.decision = decision


def register(session: Session, outcome: TrainOutcome, *, engine: Engine, name: str) -> ModelVersion:
    """Store a trained model as the next version of ``name``, with its metrics."""
    version = registry.register_version(
        session,
        engine=engine,
        name=name,
        artifact=artifact_bytes(outcome.model),
        metrics=outcome.metrics,
        training_summary=outcome.training_summary,
    )
    session.flush()
    return version


def promoted_version(session: Session, engine: Engine) -> tuple[ModelVersion | None, str | None]:
    """The engine's promoted version, and why it does not load with this version (or None)."""
    promoted = RegistryRepository(session).promoted(engine.value)
    if promoted is None:
        return None, None
    try:
        TupleModel.from_bytes(promoted.artifact)
    except ArtifactError as exc:
        return promoted, str(exc)
    return promoted, None


def rescore(
    session: Session, version_id: int, *, seed: int, test_fraction: float
) -> dict[str, Score]:
    """A version and the baselines scored on the current data's held-out simulated workloads
    (real ones are scored by the cross-validation recorded at training).

    Raises the registry's NotFoundError, :class:`ArtifactError`, or
    :class:`NotEnoughDataError` when nothing can be held out."""
    row = registry.get_version(session, version_id)
    model = TupleModel.from_bytes(row.artifact)
    examples = list(read_examples(session, engine=Engine(row.engine)))
    train_set, test_set = holdout_split(examples, test_fraction=test_fraction, seed=seed)
    if not test_set or not train_set:
        raise NotEnoughDataError(f"{len(examples)} examples are too few to hold some out")
    return evaluate(
        test=test_set,
        models={f"{row.name}:{row.version}": model},
        predictors=baseline_predictors(train_set),
    )


@dataclass(frozen=True)
class Promotion:
    version: ModelVersion
    #: None when promotion was forced without a gate (too little data to score on).
    decision: GateDecision | None


def promote(
    session: Session,
    version_id: int,
    *,
    force: bool,
    reason: str,
    seed: int,
    test_fraction: float,
    on_note: Callable[[str], None] | None = None,
) -> Promotion:
    """Promote a version if it beats the promoted one and the baselines on the current
    data's held-out simulated workloads and, where the data holds real workloads, is no worse
    than the engine default on them (its recorded leave-one-workload-out figure); ``force``
    promotes anyway, and the record says so.

    Raises :class:`GateRefusedError`, :class:`NotEnoughDataError` (no gate possible, not
    forced), :class:`ArtifactError` or the registry's NotFoundError."""
    note = on_note or (lambda _note: None)
    candidate_row = registry.get_version(session, version_id)
    engine = Engine(candidate_row.engine)
    candidate = TupleModel.from_bytes(candidate_row.artifact)
    current = None
    current_row = RegistryRepository(session).promoted(engine.value)
    if current_row is not None and current_row.id != candidate_row.id:
        try:
            current = TupleModel.from_bytes(current_row.artifact)
        except ArtifactError as exc:
            # The service cannot load it either: it answers from its heuristic, which the
            # gate's baselines stand for.
            note(
                f"the promoted {current_row.name} version {current_row.version} does not "
                f"load with this version ({exc}); the gate compares with the baselines"
            )
    examples = list(read_examples(session, engine=engine))
    decision: GateDecision | None
    try:
        decision = promotion_gate(
            candidate,
            current,
            examples,
            test_fraction=test_fraction,
            seed=seed,
            candidate_metrics=candidate_row.metrics,
        )
    except NotEnoughDataError:
        if not force:
            raise
        decision = None
    if decision is not None:
        note(f"gate: {decision.reason}: {'passes' if decision.accepted else 'refuses'}")
        if not decision.accepted and not force:
            raise GateRefusedError(decision)
    text = reason or "promoted by pooltune-trainer"
    if decision is not None:
        text += f" ({decision.reason})"
    if force:
        logger.warning("forced promotion of version %s: %s", version_id, text)
    registry.promote_version(
        session,
        version_id,
        reason=text,
        forced=force,
        evaluated_by_caller=decision is not None,
    )
    return Promotion(version=candidate_row, decision=decision)
