"""The pooltune climber's guards on their own: how far below a base a probe may go, and
when a size rolled back on a sharp drop lost rather than the server dipped."""

from __future__ import annotations

import math

from agents.climber import KnobSpace, PooltuneConfig
from agents.climber.pooltune.evidence import Evidence
from agents.climber.pooltune.guards import lost_before_the_drop, lowest_probe

SIZE = "default_pool_size"
DIM = KnobSpace.from_engine("pgbouncer", 2).size


def visit(evidence: Evidence, size: int, values: list[float], *, locks: float = 0.0) -> None:
    """One visit: ``values`` (throughputs) at ``size``, one step each."""
    for value in values:
        evidence.now += 1
        evidence.record({SIZE: size}, math.log(value), 1.0, lock_waits=locks)


def test_a_step_down_keeps_the_worst_case_above_the_start_from_the_level_it_leaves() -> None:
    """The worst case of a step down is throughput in proportion to the pool, counted from
    the level the base measured against the start (``headroom``; the search passes the
    base's own): from 4 at the start's level 4 × 0.6 = 2.4, rounded up to 3; from a base 5%
    below it the bound is 2.5, still 3; from 10 at 20% below it, 10 × 0.6 × 1.25 = 7.5 → 8
    (7 would risk 0.56 of the start), where at the start's level it is 6."""
    config = PooltuneConfig()
    evidence = Evidence(config)
    visit(evidence, 4, [1000.0, 1010.0])
    assert lowest_probe(evidence, config, DIM, 2, {SIZE: 4}, 0.0) == 3
    assert lowest_probe(evidence, config, DIM, 2, {SIZE: 4}, math.log(0.95)) == 3
    assert lowest_probe(evidence, config, DIM, 2, {SIZE: 10}, math.log(0.8)) == 8
    assert lowest_probe(evidence, config, DIM, 2, {SIZE: 10}, 0.0) == 6


def test_a_lock_queue_lifts_the_bound_until_the_flank_is_seen_to_fall() -> None:
    """Where statements queue on row locks fewer threads may gain: from a base at or above
    the start's level any size may be probed (hot rows: 2 → 1 halves the pool). From a base
    that already lost more than ``epsilon`` the flank is falling and the worst case bounds
    the step again: live, TPC-B-like × 32 on PgBouncer (a quarter of the backends waiting
    on locks) stepped from 4, 5% below its start, straight to 2, 0.58 of the best."""
    config = PooltuneConfig()
    evidence = Evidence(config)
    visit(evidence, 2, [1000.0, 1010.0], locks=0.5)
    visit(evidence, 4, [1000.0, 1010.0], locks=0.25)
    assert lowest_probe(evidence, config, DIM, 2, {SIZE: 2}, 0.0) == 1
    assert lowest_probe(evidence, config, DIM, 2, {SIZE: 4}, 0.0) == 1
    assert lowest_probe(evidence, config, DIM, 2, {SIZE: 4}, math.log(0.95)) == 3
    without = Evidence(config)
    visit(without, 4, [1000.0, 1010.0])
    assert lowest_probe(without, config, DIM, 2, {SIZE: 4}, 0.0) == 3


def test_a_drop_after_a_visit_level_with_the_best_is_the_server_dipping() -> None:
    """A size rolled back on two low samples lost only if its samples before them already
    lost more than ``economy_epsilon`` or are fewer than a visit: a full visit level with
    the best and then two samples 18% down (PgBouncer select-only × 32, live) is the server
    dipping in time, and the size gets one more look."""
    config = PooltuneConfig()
    level_then_drop = [12000.0, 12400.0, 11900.0, 12300.0, 12100.0, 12200.0, 10000.0, 9900.0]
    lower_then_drop = [10800.0, 11000.0, 10900.0, 11100.0, 10950.0, 11050.0, 10000.0, 9900.0]
    for values, lost in ((level_then_drop, False), (lower_then_drop, True)):
        evidence = Evidence(config)
        visit(evidence, 20, [12100.0, 12300.0, 11950.0, 12200.0])
        visit(evidence, 11, values)
        visit(evidence, 20, [12150.0, 12250.0])
        assert lost_before_the_drop(evidence, config, {SIZE: 20}, {SIZE: 11}) is lost
    short = Evidence(config)
    visit(short, 20, [12100.0, 12300.0, 11950.0, 12200.0])
    visit(short, 11, [12200.0, 10000.0, 9900.0])
    assert lost_before_the_drop(short, config, {SIZE: 20}, {SIZE: 11})
