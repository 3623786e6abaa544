"""The A/B/A re-test that keeps or drops a change (a secondary knob off its default, a gain
the sample cap forced): a real gain is kept, and a change that cannot be shown to gain ε
is dropped as soon as the samples rule the gain out, not after the whole sample cap."""

from __future__ import annotations

import math
import statistics

from agents.climber import KnobSpace
from agents.climber.pooltune.config import PooltuneConfig
from agents.climber.pooltune.evidence import Evidence

from .programs import Bench, new_search

STALL = "thread_pool_stall_limit"
SPACE = KnobSpace.from_engine("mariadb", 8)


def _confirm(gain: float, seed: int, cv: float = 0.05) -> tuple[bool, int]:
    """Re-test stall limit 125 against the default 500 on a server where 125 gains
    ``gain``: whether it was kept and how many samples it took at 125."""
    evidence = Evidence(PooltuneConfig())
    before = SPACE.defaults()
    after = {**before, STALL: 125}
    bench = Bench(
        evidence,
        lambda knobs, step: 1000.0 * (1.0 + gain if knobs == after else 1.0),
        cv=cv,
        seed=seed,
    )
    search = new_search(SPACE, 8, evidence, before)
    kept = bench.run(search.confirm(SPACE.dims[2], before, after))
    return kept, sum(knobs == after for knobs in bench.samples)


def test_a_value_without_effect_is_dropped_before_the_sample_cap() -> None:
    """Without the futility stop every seed took 18 samples at 125: the cap of 16, reached
    on the visit of 3 that crossed it."""
    runs = [_confirm(0.0, seed) for seed in range(20)]
    assert sum(kept for kept, _ in runs) <= 1
    assert statistics.median(taken for _, taken in runs) <= 10


def test_a_real_gain_is_still_kept() -> None:
    runs = [_confirm(0.10, seed) for seed in range(20)]
    assert sum(kept for kept, _ in runs) >= 19


def test_one_bad_visit_does_not_end_the_re_test() -> None:
    """A probe whose only visit measured 10% low (a stall, a burst of the noise) could
    still show a gain; after a second visit as low the gain is ruled out."""
    evidence = Evidence(PooltuneConfig())
    before = SPACE.defaults()
    after = {**before, STALL: 125}
    for knobs, value in ((before, 1000.0), (after, 900.0), (before, 1000.0)):
        for _ in range(3):
            evidence.now += 1
            evidence.record(knobs, math.log(value), None)
    readings = (evidence.readings(before), evidence.readings(after))
    assert not evidence.gain_ruled_out(*readings, z=1.5)
    for knobs, value in ((after, 900.0), (before, 1000.0)):
        for _ in range(3):
            evidence.now += 1
            evidence.record(knobs, math.log(value), None)
    readings = (evidence.readings(before), evidence.readings(after))
    assert evidence.gain_ruled_out(*readings, z=1.5)
