"""Where a climb starts: the service's recommendation, else the local heuristic, applied
inside the agent's hard bounds."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from agents.config import AgentConfig
from agents.heuristic import heuristic_recommendation
from agents.knobs import clip_to_bounds
from agents.service_client import ServiceClient, ServiceError
from agents.wire import (
    HostFacts,
    KnobRange,
    KnobTuple,
    RecommendationRequest,
    RecommendationResponse,
    Source,
    WorkloadProfile,
)

logger = logging.getLogger(__name__)


def recommend(
    service: ServiceClient | None,
    *,
    host: HostFacts,
    profile: WorkloadProfile,
    current: Mapping[str, int],
) -> RecommendationResponse:
    """The service's recommendation, else the same heuristic computed locally."""
    if service is not None:
        request = RecommendationRequest(
            host=host,
            profile=profile,
            current_tuple=KnobTuple(engine=host.engine, values=dict(current)),
        )
        try:
            answer = service.recommend(request, max_attempts=2)
        except ServiceError as exc:
            logger.warning(
                "no recommendation from the service (%s): using the local heuristic", exc
            )
        else:
            logger.info(
                "service recommends %s (%s%s)",
                answer.start_tuple.values,
                answer.source.value,
                f", model {answer.model_version}" if answer.model_version else "",
            )
            return answer
    else:
        logger.info("no service configured: using the local heuristic")
    start, ranges = heuristic_recommendation(host, profile)
    return RecommendationResponse(
        start_tuple=start, ranges=ranges, source=Source.LOCAL_HEURISTIC, model_version=None
    )


def start_tuple(
    config: AgentConfig,
    answer: RecommendationResponse,
    *,
    current: Mapping[str, int],
    names: Sequence[str],
) -> dict[str, int]:
    """The tuple a climb starts from: ``current`` with the recommended values of the tuned
    knobs ``names``, clipped into the hard bounds."""
    return config.clip({**current, **answer.start_tuple.values}, names=names)


def start_ranges(
    config: AgentConfig, answer: RecommendationResponse, *, names: Sequence[str]
) -> dict[str, tuple[int, int]]:
    """The recommended plausible range of each tuned knob, clipped into the hard bounds."""
    ranges: dict[str, tuple[int, int]] = {}
    for name, knob_range in answer.ranges.items():
        if name in names:
            low, high = config.knob_bounds(name)
            ranges[name] = (
                clip_to_bounds(knob_range.low, low, high),
                clip_to_bounds(knob_range.high, low, high),
            )
    return ranges


def bounded_recommendation(
    config: AgentConfig,
    answer: RecommendationResponse,
    *,
    current: Mapping[str, int],
    names: Sequence[str],
) -> RecommendationResponse:
    """``answer`` as this agent would apply it: the tuned knobs only, inside the hard bounds
    (the admin approves what would happen, not what the bounds would change)."""
    values = start_tuple(config, answer, current=current, names=names)
    ranges = start_ranges(config, answer, names=names)
    return RecommendationResponse(
        start_tuple=KnobTuple(engine=answer.start_tuple.engine, values=values),
        ranges={name: KnobRange(low=low, high=high) for name, (low, high) in ranges.items()},
        source=answer.source,
        model_version=answer.model_version,
    )
