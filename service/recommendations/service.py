"""Recommendations: the promoted model of the engine, else the heuristic — never an error."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, cast

from pydantic import ValidationError
from sqlalchemy import Table, insert
from sqlalchemy.orm import Session

from agents.heuristic import heuristic_prediction
from agents.knobs import catalog
from agents.wire import (
    KnobRange,
    KnobTuple,
    PredictedGain,
    RecommendationRequest,
    RecommendationResponse,
    Source,
)
from service.auth.service import Principal
from service.db import utcnow
from service.hosts import service as host_service
from service.hot_db import HotDB
from service.recommendations.models import RecommendationLog
from service.recommendations.predictor import (
    GainEstimate,
    Prediction,
    Predictor,
    Recommendation,
    RecommendingPredictor,
)
from service.recommendations.predictor_cache import (
    UNREAD,
    LoadedPredictor,
    PredictorCache,
    PredictorLoadError,
    PromotedPointer,
)
from service.registry.repository import RegistryRepository

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RecommendationOutcome:
    response: RecommendationResponse
    pointer: PromotedPointer | None
    fallback_reason: str | None


#: The largest novelty a response states (the wire's bound): beyond it, just "very far".
MAX_NOVELTY = 1e6


class InvalidPredictionError(ValueError):
    pass


def _sanitize(request: RecommendationRequest, prediction: Any, heuristic: Prediction) -> Prediction:
    """Check a model's answer, clip it to the catalog and complete it with the heuristic."""
    if not (isinstance(prediction, tuple) and len(prediction) == 2):
        raise InvalidPredictionError("predict() must return (values, ranges)")
    raw_values, raw_ranges = prediction
    if not isinstance(raw_values, dict) or not raw_values:
        raise InvalidPredictionError("predict() gave no knob values")
    if not isinstance(raw_ranges, dict):
        raise InvalidPredictionError("predict() ranges must be a dict")
    knobs = catalog(request.host.engine)
    heuristic_values, heuristic_ranges = heuristic
    values = dict(heuristic_values)
    ranges = dict(heuristic_ranges)
    for name, raw in raw_values.items():
        knob = knobs.get(name)
        if knob is None:
            raise InvalidPredictionError(f"{name!r} is not a {request.host.engine.value} knob")
        if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
            raise InvalidPredictionError(f"{name}: {raw!r} is not a finite number")
        value = knob.clip(raw)
        low, high = value, value
        given = raw_ranges.get(name)
        if given is not None:
            try:
                low, high = (knob.clip(bound) for bound in given)
            except (TypeError, ValueError) as exc:
                raise InvalidPredictionError(f"{name}: range {given!r} is not two numbers") from exc
        values[name] = value
        ranges[name] = (min(low, high, value), max(low, high, value))
    return values, ranges


def _model_answer(predictor: Predictor, request: RecommendationRequest) -> Recommendation:
    """The predictor's answer; with the predicted gain over the request's current tuple when
    the predictor gives one."""
    if isinstance(predictor, RecommendingPredictor):
        current = request.current_tuple.values if request.current_tuple is not None else None
        return predictor.recommend(request.host, request.profile, current)
    prediction = predictor.predict(request.host, request.profile)
    if not (isinstance(prediction, tuple) and len(prediction) == 2):
        raise InvalidPredictionError("predict() must return (values, ranges)")
    values, ranges = prediction
    return Recommendation(values=values, ranges=ranges)


def _predicted_gain(answer: Recommendation, served: Prediction) -> PredictedGain | None:
    """The model's predicted gain, if it holds for the tuple served (not when the service had
    to change a value the model gave) and is a sane interval; else none."""
    gain: GainEstimate | None = answer.predicted_gain
    if gain is None:
        return None
    values, _ = served
    if any(values.get(name) != value for name, value in answer.values.items()):
        return None
    try:
        return PredictedGain(estimate=gain.estimate, low=gain.low, high=gain.high)
    except ValidationError:
        logger.warning("model gave an unusable predicted gain %s; left out", gain)
        return None


def _response(
    request: RecommendationRequest,
    prediction: Prediction,
    *,
    source: Source,
    model_version: str | None,
    answer: Recommendation | None = None,
    predicted_gain: PredictedGain | None = None,
) -> RecommendationResponse:
    values, ranges = prediction
    novelty = answer.novelty if answer is not None else None
    return RecommendationResponse(
        start_tuple=KnobTuple(engine=request.host.engine, values=values),
        ranges={name: KnobRange(low=low, high=high) for name, (low, high) in ranges.items()},
        source=source,
        model_version=model_version,
        predicted_gain=predicted_gain,
        novelty=min(novelty, MAX_NOVELTY)
        if novelty is not None and math.isfinite(novelty)
        else None,
        out_of_distribution=bool(answer.out_of_distribution) if answer is not None else False,
    )


def answer(
    request: RecommendationRequest,
    pointer: PromotedPointer | None,
    loaded: LoadedPredictor | PredictorLoadError | None,
) -> RecommendationOutcome:
    """The answer to ``request``: from ``loaded`` (the promoted model, or why it did not
    load), else from the heuristic. No database: the hot path runs this as is."""
    engine = request.host.engine.value
    heuristic = heuristic_prediction(request.host, request.profile)
    fallback_reason: str | None = None
    response: RecommendationResponse | None = None
    if pointer is not None and loaded is not None:
        try:
            if isinstance(loaded, PredictorLoadError):
                raise loaded
            model_answer = _model_answer(loaded.predictor, request)
            prediction = (model_answer.values, model_answer.ranges)
            served = _sanitize(request, prediction, heuristic)
            response = _response(
                request,
                served,
                source=Source.MODEL,
                model_version=pointer.label,
                answer=model_answer,
                predicted_gain=_predicted_gain(model_answer, served),
            )
        except PredictorLoadError as exc:
            fallback_reason = f"load: {exc}"
        except (InvalidPredictionError, ValidationError, ArithmeticError) as exc:
            fallback_reason = f"predict: {exc}"
            logger.error(
                "model answer rejected; answering from the heuristic",
                extra={"engine": engine, "model_version": pointer.label, "error": str(exc)},
            )
        except Exception as exc:  # a model is foreign code: any failure means fall back
            fallback_reason = f"predict: {type(exc).__name__}: {exc}"
            logger.exception(
                "model failed; answering from the heuristic",
                extra={"engine": engine, "model_version": pointer.label},
            )
    if response is None:
        response = _response(request, heuristic, source=Source.HEURISTIC, model_version=None)
    return RecommendationOutcome(
        response=response,
        pointer=pointer if response.source == Source.MODEL else None,
        fallback_reason=fallback_reason,
    )


def log_row(
    request: RecommendationRequest,
    outcome: RecommendationOutcome,
    *,
    host_id: int | None,
    agent_id: int | None,
) -> dict[str, Any]:
    """The ``recommendation_log`` row of an answer (the trainer evaluates from these)."""
    response = outcome.response
    gain = response.predicted_gain
    return {
        "created_at": utcnow(),
        "engine": request.host.engine.value,
        "host_id": host_id,
        "agent_id": agent_id,
        "source": response.source.value,
        "model_version_id": outcome.pointer.version_id if outcome.pointer else None,
        "model_version": response.model_version,
        "host_facts": request.host.model_dump(mode="json"),
        "profile": request.profile.model_dump(mode="json"),
        "start_tuple": dict(response.start_tuple.values),
        "ranges": {name: [r.low, r.high] for name, r in response.ranges.items()},
        "predicted_gain": gain.estimate if gain else None,
        "predicted_gain_low": gain.low if gain else None,
        "predicted_gain_high": gain.high if gain else None,
        "fallback_reason": outcome.fallback_reason,
    }


def _loaded(
    session: Session, cache: PredictorCache, engine: str, pointer: PromotedPointer | None
) -> LoadedPredictor | PredictorLoadError | None:
    if pointer is None:
        return None
    try:
        return cache.get(session, engine, pointer)
    except PredictorLoadError as exc:
        return exc


def recommend(
    session: Session,
    request: RecommendationRequest,
    *,
    cache: PredictorCache,
    host_id: int | None,
    agent_id: int | None,
) -> RecommendationOutcome:
    """Answer from the engine's promoted model, or from the heuristic; log the answer (in
    the session's transaction). The hot route uses :func:`recommend_hot`.

    An agent (``host_id`` given) asks for its own host only; the admin for any.
    """
    if host_id is not None:
        host_service.require_own_host(session, host_id, request.host)
    engine = request.host.engine.value
    pointer = cache.promoted_pointer(session, engine)
    outcome = answer(request, pointer, _loaded(session, cache, engine, pointer))
    session.execute(
        insert(RecommendationLog), [log_row(request, outcome, host_id=host_id, agent_id=agent_id)]
    )
    return outcome


async def recommend_hot(
    hot_db: HotDB,
    request: RecommendationRequest,
    *,
    cache: PredictorCache,
    principal: Principal,
    promotion_check_s: float,
) -> RecommendationOutcome:
    """:func:`recommend` for the hot route: the host check against the token's host, the
    promoted version as read at most ``promotion_check_s`` ago, the model preloaded (read
    from the database only when the promoted version changes), and the log row batched —
    usually one round trip shared with other requests, none of its own."""
    if principal.hostname is not None and principal.engine is not None:
        host_service.check_own_host(principal.hostname, principal.engine, request.host)
    engine = request.host.engine.value
    pointer = cache.recent_pointer(engine, max_age_s=promotion_check_s)
    if pointer is UNREAD:
        read_at = cache.now()
        pointer = await hot_db.run(lambda c: cache.promoted_pointer(Session(bind=c), engine))
        cache.remember_pointer(engine, pointer, read_at=read_at)
    loaded: LoadedPredictor | PredictorLoadError | None
    try:
        loaded = cache.peek(engine, pointer)
    except PredictorLoadError as exc:
        loaded = exc
    if loaded is None and pointer is not None:

        async def read_artifact(version_id: int) -> bytes | None:
            return await hot_db.run(
                lambda c: RegistryRepository(Session(bind=c)).artifact(version_id)
            )

        try:
            loaded = await cache.get_async(engine, pointer, read_artifact)
        except PredictorLoadError as exc:
            loaded = exc
    outcome = answer(request, pointer, loaded)
    await hot_db.append(
        cast(Table, RecommendationLog.__table__),
        log_row(request, outcome, host_id=principal.host_id, agent_id=principal.agent_id),
    )
    return outcome
