"""Collectors against a scripted runner (the real server is in test_mariadb_target.py)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from agents.collectors import (
    QueryResponseTimeCollector,
    Row,
    SyncWaitsCollector,
    sync_waits_unavailable,
)


class ScriptedRunner:
    """Answers each query by the first key it contains."""

    def __init__(self, answers: Mapping[str, list[Row]]) -> None:
        self.answers = answers

    def query(self, sql: str) -> list[Row]:
        for key, rows in self.answers.items():
            if key in sql:
                return rows
        raise AssertionError(f"unexpected query {sql}")


AVAILABLE = {
    "@@global.performance_schema": [(1,)],
    "setup_instruments": [(292,)],
    "setup_consumers": [(2,)],
}


def test_sync_waits_sum_picoseconds_into_seconds() -> None:
    runner = ScriptedRunner({"events_waits_summary": [(3_500_000_000_000, 12_345)]})
    collected = SyncWaitsCollector().collect(runner)
    assert collected.counters == {"sync_wait_s": pytest.approx(3.5), "sync_waits": 12_345}


def test_an_empty_summary_gives_no_counter() -> None:
    runner = ScriptedRunner({"events_waits_summary": [(None, None)]})
    assert SyncWaitsCollector().collect(runner).counters == {}
    # One value missing is as good as none: a count without its total would read as zero.
    runner = ScriptedRunner({"events_waits_summary": [(None, 12)]})
    assert SyncWaitsCollector().collect(runner).counters == {}


def test_the_response_time_histogram_counts_seconds() -> None:
    runner = ScriptedRunner({"QUERY_RESPONSE_TIME": [("1200", "3.25")]})
    collected = QueryResponseTimeCollector().collect(runner)
    assert collected.counters == {"qrt_count": 1200.0, "qrt_total_s": 3.25}
    empty = ScriptedRunner({"QUERY_RESPONSE_TIME": []})
    assert QueryResponseTimeCollector().collect(empty).counters == {}


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"@@global.performance_schema": [(0,)]}, "performance_schema is OFF"),
        ({"setup_instruments": [(0,)]}, "instruments are not enabled and timed"),
        ({"setup_consumers": [(1,)]}, "consumer is off"),
    ],
)
def test_availability_says_why_the_time_cannot_be_measured(
    change: dict[str, list[Row]], reason: str
) -> None:
    assert sync_waits_unavailable(ScriptedRunner(AVAILABLE)) is None
    missing = sync_waits_unavailable(ScriptedRunner(AVAILABLE | change))
    assert missing is not None and reason in missing
