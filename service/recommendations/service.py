"""Recommendations: the promoted model of the engine, else the heuristic — never an error."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from sqlalchemy.orm import Session

from agents.heuristic import heuristic_prediction
from agents.knobs import catalog
from agents.wire import (
    KnobRange,
    KnobTuple,
    RecommendationRequest,
    RecommendationResponse,
    Source,
)
from service.db import utcnow
from service.recommendations.model_cache import ModelCache, ModelLoadError, PromotedPointer
from service.recommendations.model_format import Prediction
from service.recommendations.models import RecommendationLog
from service.recommendations.repository import RecommendationLogRepository

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RecommendationOutcome:
    response: RecommendationResponse
    pointer: PromotedPointer | None
    fallback_reason: str | None


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


def _response(
    request: RecommendationRequest,
    prediction: Prediction,
    *,
    source: Source,
    model_version: str | None,
) -> RecommendationResponse:
    values, ranges = prediction
    return RecommendationResponse(
        start_tuple=KnobTuple(engine=request.host.engine, values=values),
        ranges={name: KnobRange(low=low, high=high) for name, (low, high) in ranges.items()},
        source=source,
        model_version=model_version,
    )


def recommend(
    session: Session,
    request: RecommendationRequest,
    *,
    cache: ModelCache,
    host_id: int | None,
    agent_id: int | None,
) -> RecommendationOutcome:
    """Answer from the engine's promoted model, or from the heuristic; log the answer."""
    engine = request.host.engine.value
    heuristic = heuristic_prediction(request.host, request.profile)
    pointer = cache.promoted_pointer(session, engine)
    fallback_reason: str | None = None
    response: RecommendationResponse | None = None
    if pointer is not None:
        try:
            loaded = cache.get(session, engine, pointer)
            prediction = loaded.predictor.predict(request.host, request.profile)
            response = _response(
                request,
                _sanitize(request, prediction, heuristic),
                source=Source.MODEL,
                model_version=pointer.label,
            )
        except ModelLoadError as exc:
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
    log = RecommendationLogRepository(session)
    log.relax_durability()
    log.add(
        RecommendationLog(
            created_at=utcnow(),
            engine=engine,
            host_id=host_id,
            agent_id=agent_id,
            source=response.source.value,
            model_version_id=pointer.version_id
            if response.source == Source.MODEL and pointer
            else None,
            model_version=response.model_version,
            host_facts=request.host.model_dump(mode="json"),
            profile=request.profile.model_dump(mode="json"),
            start_tuple=dict(response.start_tuple.values),
            ranges={name: [r.low, r.high] for name, r in response.ranges.items()},
            fallback_reason=fallback_reason,
        )
    )
    return RecommendationOutcome(
        response=response,
        pointer=pointer if response.source == Source.MODEL else None,
        fallback_reason=fallback_reason,
    )
