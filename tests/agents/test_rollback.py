"""The loop's rollback rule and the per-tuple throughput levels it compares against."""

from __future__ import annotations

import logging

import pytest

from agents.rollback import LEVELS_KEPT, RollbackGuard, ThroughputLevels

GOOD = (1000.0, 980.0, 1020.0)
SIZE_4 = {"thread_pool_size": 4}


def test_levels_keep_the_latest_throughputs_per_tuple() -> None:
    levels = ThroughputLevels()
    for value in range(LEVELS_KEPT + 2):
        levels.add({"thread_pool_size": 4}, float(value))
    levels.add({"thread_pool_size": 8}, 7.0)
    assert levels.at({"thread_pool_size": 4}) == tuple(float(v) for v in range(2, 7))
    assert levels.at({"thread_pool_size": 8}) == (7.0,)
    assert levels.at({"thread_pool_size": 2}) == ()
    levels.clear()
    assert levels.at({"thread_pool_size": 4}) == ()


def test_a_rollback_is_due_after_enough_low_samples_in_a_row(
    caplog: pytest.LogCaptureFixture,
) -> None:
    guard = RollbackGuard()
    with caplog.at_level(logging.WARNING, logger="agents.rollback"):
        checks = [guard.due(400.0, SIZE_4, GOOD, below=0.5, samples=3) for _ in range(3)]
    assert checks == [False, False, True]
    assert guard.low_samples == 0
    # The log names the median of the good tuple's levels and the tuple it goes back to.
    assert "tuple's 1000 for 3 samples: rolling back to {'thread_pool_size': 4}" in caplog.text


def test_one_good_sample_or_no_reference_starts_the_count_again() -> None:
    guard = RollbackGuard()
    assert not guard.due(400.0, SIZE_4, GOOD, below=0.5, samples=2)
    assert not guard.due(600.0, SIZE_4, GOOD, below=0.5, samples=2)  # above half the level
    assert not guard.due(400.0, SIZE_4, GOOD, below=0.5, samples=2)
    assert not guard.due(400.0, SIZE_4, (), below=0.5, samples=2)  # at the good tuple
    assert not guard.due(400.0, SIZE_4, GOOD, below=0.5, samples=2)
    assert guard.due(400.0, SIZE_4, GOOD, below=0.5, samples=2)
    # Against the median (1000), not the mean (677) that one collapsed sample drags down.
    assert RollbackGuard().due(400.0, SIZE_4, (1020.0, 1000.0, 10.0), below=0.5, samples=1)
