"""The loop's rollback rule and the per-tuple throughput levels it compares against."""

from __future__ import annotations

from agents.rollback import LEVELS_KEPT, RollbackGuard, ThroughputLevels

GOOD = (1000.0, 980.0, 1020.0)


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


def test_a_rollback_is_due_after_enough_low_samples_in_a_row() -> None:
    guard = RollbackGuard()
    checks = [guard.check(400.0, GOOD, below=0.5, samples=3) for _ in range(3)]
    assert checks == [None, None, 1000.0]  # the median of the good tuple's levels
    assert guard.low_samples == 0


def test_one_good_sample_or_no_reference_starts_the_count_again() -> None:
    guard = RollbackGuard()
    assert guard.check(400.0, GOOD, below=0.5, samples=2) is None
    assert guard.check(600.0, GOOD, below=0.5, samples=2) is None  # above half the level
    assert guard.check(400.0, GOOD, below=0.5, samples=2) is None
    assert guard.check(400.0, (), below=0.5, samples=2) is None  # at the good tuple
    assert guard.check(400.0, GOOD, below=0.5, samples=2) is None
    assert guard.check(400.0, GOOD, below=0.5, samples=2) == 1000.0
