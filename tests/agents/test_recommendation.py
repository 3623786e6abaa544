"""Where a climb starts: the recommendation, else the heuristic, inside the hard bounds."""

from __future__ import annotations

from agents.config import parse_config
from agents.heuristic import heuristic_recommendation
from agents.knobs import Engine
from agents.recommendation import recommend, start_ranges, start_tuple
from agents.wire import KnobRange, KnobTuple, RecommendationResponse, Source
from tests.agents.reports import HOST, PROFILE

SIZE = "thread_pool_size"


def _answer(values: dict[str, int], ranges: dict[str, tuple[int, int]]) -> RecommendationResponse:
    return RecommendationResponse(
        start_tuple=KnobTuple(engine=Engine.MARIADB, values=values),
        ranges={name: KnobRange(low=low, high=high) for name, (low, high) in ranges.items()},
        source=Source.MODEL,
        model_version="7",
    )


def test_without_a_service_the_start_is_the_local_heuristic() -> None:
    answer = recommend(None, host=HOST, profile=PROFILE, current={SIZE: 2})
    start, ranges = heuristic_recommendation(HOST, PROFILE)
    assert answer.source is Source.LOCAL_HEURISTIC
    assert answer.start_tuple == start and answer.ranges == ranges


def test_the_start_tuple_keeps_to_the_tuned_knobs_and_the_hard_bounds() -> None:
    config = parse_config({"bounds": {SIZE: [2, 16]}, "climber": {"knobs": [SIZE]}}, env={})
    answer = _answer({SIZE: 64, "thread_pool_oversubscribe": 10}, {SIZE: (1, 128)})
    current = {SIZE: 4}
    assert start_tuple(config, answer, current=current, names=[SIZE]) == {SIZE: 16}
    assert start_ranges(config, answer, names=[SIZE]) == {SIZE: (2, 16)}
    assert start_ranges(config, answer, names=["thread_pool_stall_limit"]) == {}
