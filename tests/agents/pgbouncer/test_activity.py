"""The pg_stat_activity sampler over the pools' backends: every tuned pool's states added up,
and each database's own where SHOW SERVERS told which backend serves which pool."""

from __future__ import annotations

from typing import Any

import pytest

from agents.pgbouncer import profile as pgbouncer_profile
from agents.pgbouncer.collectors import (
    ActivityCollector,
    Scope,
    ServersCollector,
    activity_counter,
)
from agents.pgbouncer.view import pool_snapshot
from agents.targets.base import Snapshot


class Scripted:
    """A query runner answering SHOW SERVERS and pg_stat_activity from fixed rows."""

    def __init__(self, servers: list[dict[str, Any]], backends: list[dict[str, Any]]) -> None:
        self.servers, self.backends = servers, backends
        self.queries: list[str] = []

    def query_dicts(self, sql: str) -> list[dict[str, Any]]:
        self.queries.append(sql)
        return self.servers if sql == "SHOW SERVERS" else self.backends


#: Pool a: two backends waiting on row locks and one on CPU; pool b: two reading on CPU.
SERVERS = [
    {"database": "a", "remote_pid": 11},
    {"database": "a", "remote_pid": 12},
    {"database": "a", "remote_pid": 13},
    {"database": "b", "remote_pid": 21},
    {"database": "b", "remote_pid": 22},
    {"database": "b", "remote_pid": 23},
]
BACKENDS = [
    {"pid": 11, "state": "active", "wait_event_type": "Lock"},
    {"pid": 12, "state": "active", "wait_event_type": "Lock"},
    {"pid": 13, "state": "active", "wait_event_type": None},
    {"pid": 21, "state": "active", "wait_event_type": None},
    {"pid": 22, "state": "active", "wait_event_type": None},
    {"pid": 23, "state": "idle", "wait_event_type": "Client"},
]


def sample(scope: Scope, collector: ActivityCollector, runner: Scripted, t: float) -> Snapshot:
    scope.servers_known = False
    if runner.servers:
        ServersCollector(scope).collect(runner)
    counters = collector.collect(runner).counters | {"pgb_xact_count": 100.0 * t}
    return Snapshot(taken_at=t, uptime_s=100.0, counters=counters, gauges={})


def test_each_pool_reads_its_own_lock_share_and_the_whole_reads_both() -> None:
    scope = Scope(databases=frozenset({"a", "b"}))
    collector, runner = ActivityCollector(scope), Scripted(SERVERS, BACKENDS)
    first, last = sample(scope, collector, runner, 0.0), sample(scope, collector, runner, 2.0)
    assert "pid IN (11, 12, 13, 21, 22, 23)" in runner.queries[-1]

    def share(snapshot_of: Any) -> float | None:
        return pgbouncer_profile.lock_share(snapshot_of(first), snapshot_of(last))

    assert share(lambda s: s) == pytest.approx(2 / 5)
    assert share(lambda s: pool_snapshot(s, "a")) == pytest.approx(2 / 3)
    assert share(lambda s: pool_snapshot(s, "b")) == 0.0
    # Each pool's counts add up to the whole's.
    for kind in ("backends", "in_xact", "cpu", "lock"):
        whole = last.counters[activity_counter(kind)]
        parts = sum(last.counters[activity_counter(kind, d)] for d in "ab")
        assert whole == parts, kind


def test_a_pool_without_backends_has_no_share_and_no_other_pools_waits() -> None:
    scope = Scope(databases=frozenset({"a", "b", "c"}))
    collector, runner = ActivityCollector(scope), Scripted(SERVERS, BACKENDS)
    first, last = sample(scope, collector, runner, 0.0), sample(scope, collector, runner, 2.0)
    c = pgbouncer_profile.interval(pool_snapshot(first, "c"), pool_snapshot(last, "c"))
    assert c.lock_waits is None


def test_without_show_servers_a_pool_reads_no_lock_share_of_its_own() -> None:
    """No pid → pool map (SHOW SERVERS not read): the sampler narrows to the pools'
    databases for the whole, and a pool's view reads no lock signal rather than another
    pool's (the climber then reads no lock queueing: the careful side)."""
    scope = Scope(databases=frozenset({"a", "b"}), pg_databases=frozenset({"bench"}))
    collector, runner = ActivityCollector(scope), Scripted([], BACKENDS)
    first, last = sample(scope, collector, runner, 0.0), sample(scope, collector, runner, 2.0)
    assert "datname IN ('bench')" in runner.queries[-1]
    assert last.counters[activity_counter("samples", "a")] == 0.0
    whole = pgbouncer_profile.lock_share(first, last)
    assert whole == pytest.approx(2 / 5)
    # Zero samples of pool a's own: its view has no share of its own to give.
    assert pgbouncer_profile.lock_share(pool_snapshot(first, "a"), pool_snapshot(last, "a")) is None


def test_a_lone_target_counts_the_whole_only() -> None:
    """Without listed pools the target is one pool: no per-database counters."""
    scope = Scope()
    collector, runner = ActivityCollector(scope), Scripted(SERVERS, BACKENDS)
    last = sample(scope, collector, runner, 0.0)
    assert not [name for name in last.counters if name.startswith("pga_") and "@" in name]
    assert last.counters[activity_counter("lock")] == 2.0
