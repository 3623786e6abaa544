"""What a target tells the climber about a stall: MariaDB's pool stall counter and gauge."""

from __future__ import annotations

from agents.profile import pool_stalled
from agents.targets.base import Snapshot


def snapshot(
    *, stalls: float | None = None, stalled_groups: float | None = None, at: float = 0.0
) -> Snapshot:
    counters = {} if stalls is None else {"tp_stalls": stalls}
    gauges = {} if stalled_groups is None else {"tp_stalled_groups": stalled_groups}
    return Snapshot(taken_at=at, uptime_s=100.0 + at, counters=counters, gauges=gauges)


def test_a_stall_counted_between_two_snapshots_flags_the_sample() -> None:
    assert pool_stalled(snapshot(stalls=5), snapshot(stalls=7, stalled_groups=0, at=2))
    assert not pool_stalled(snapshot(stalls=5), snapshot(stalls=5, stalled_groups=0, at=2))


def test_a_group_stalled_right_now_flags_the_sample() -> None:
    assert pool_stalled(snapshot(stalls=5), snapshot(stalls=5, stalled_groups=1, at=2))
    assert pool_stalled(snapshot(), snapshot(stalled_groups=2, at=2))


def test_without_the_pools_counters_the_target_cannot_tell() -> None:
    assert pool_stalled(snapshot(), snapshot(at=2)) is None
