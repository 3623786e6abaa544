"""A gain inside a bracket counts only on A/B/A: the reference is measured again after the
probe, so a server whose level moved while the probe was measured shows as a change, not as
a better size (live PgBouncer, select-only × 32: a size refined into while the server ran
30% faster for a minute was held for the rest of the run)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from agents.climber import KnobSpace
from agents.climber.pooltune.config import PooltuneConfig
from agents.climber.pooltune.evidence import Comparison, Evidence, Rules, Verdict
from agents.climber.pooltune.search import Search

from .programs import Bench, new_search

SIZE = "thread_pool_size"
SPACE = KnobSpace.from_engine("mariadb", 2, names=[SIZE])
REFERENCE = {SIZE: 8}
PROBE = {SIZE: 10}


def _probe(
    level: Callable[[Mapping[str, int], int], float], *, witness_gain: bool
) -> tuple[Comparison, Search, list[dict[str, int]]]:
    """The reference measured at ``level`` for 6 steps, then one probe of PROBE; returns the
    verdict, the search and the tuples sampled after the probe's first visit."""
    evidence = Evidence(PooltuneConfig())
    bench = Bench(evidence, level, cv=0.02, seed=1)
    bench.measure(REFERENCE, 6)
    search = new_search(SPACE, 2, evidence, REFERENCE)
    verdict = bench.run(
        search.probe(dict(PROBE), rules=Rules(witness_gain=witness_gain), reference=dict(REFERENCE))
    )
    return verdict, search, bench.samples[6:]


def _server_moved_up(knobs: Mapping[str, int], step: int) -> float:
    """Every size ties; from step 7 on (the probe's first sample) the server runs 30% faster."""
    return 1300.0 if step >= 7 else 1000.0


def test_a_server_that_moved_during_the_probe_is_a_change_not_a_gain() -> None:
    verdict, search, requested = _probe(_server_moved_up, witness_gain=True)
    assert REFERENCE in requested[1:]  # measured again after the probe
    assert verdict.verdict is not Verdict.BETTER
    assert search.changed is not None


def test_without_the_witness_the_move_reads_as_a_gain() -> None:
    """What the witness prevents: A/B alone takes the server's move for the probe's gain."""
    verdict, search, _ = _probe(_server_moved_up, witness_gain=False)
    assert verdict.verdict is Verdict.BETTER
    assert search.changed is None


def test_a_real_gain_survives_the_witness() -> None:
    def better(knobs: Mapping[str, int], step: int) -> float:
        return 1300.0 if knobs == PROBE else 1000.0

    verdict, search, requested = _probe(better, witness_gain=True)
    assert verdict.verdict is Verdict.BETTER
    assert search.changed is None
    assert requested[-1] == REFERENCE  # the witness came last: no second visit of the probe
