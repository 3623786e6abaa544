"""What the real replays resolve: a global sweep's answer within a climb's sample budget.

Issue 15's real-curve bars ask a climber to end ≥ 0.95 of the best where a curve differs
and within 4× the smallest tied size where it is flat. This measures what the replayed
samples themselves allow, apart from any hill climbing: successive halving over the sizes
the sweep measured (the grid, where the truth is known), in short interleaved visits, a
lag sample discarded after each change, the medians of log throughput compared. Its pick
is scored like a climber's final size, and its own cost (the mean and worst truth of the
sizes it visited) is printed beside it: a bound on what the samples can tell, not a
tuner. Why and what it showed: docs/climber.md ("What the benchmark shows").
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from agents.climber import KnobSpace
from agents.climber.pooltune.config import PooltuneConfig
from benchmarks.climb.metrics import percentile
from benchmarks.climb.replay import real_cases, replay_families
from benchmarks.climb.report import table, write
from benchmarks.climb.report_families import REAL_QUALITY, REAL_SIZE_FACTOR
from benchmarks.climb.scenarios import PAIRED_FAMILY, REAL_FAMILY, Scenario
from benchmarks.climb.worlds import build_world

#: Samples per visit of a size (after the lag sample), as the climber's shortest probe.
VISIT_SAMPLES = 2
#: Rounds of successive halving; each keeps the better half (at least two, one at the end).
ROUNDS = 3


@dataclass(frozen=True, slots=True)
class SweepResult:
    case: str
    seed: int
    differs: bool
    #: The size with the best median, and its truth over the best size's.
    best_pick: int
    quality: float
    #: The smallest size whose median ties with the best median (economy's tolerance).
    tied_pick: int
    tied_quality: float
    tied_size: int
    #: The sweep's own cost: the mean and the lowest truth of the sizes it visited, over the
    #: engine default's.
    mean_cost: float
    worst: float
    samples: int


def sweep_case(case_id: str, seed: int, budget: int) -> SweepResult:
    """Successive halving over the case's measured sizes with ``budget`` kept samples."""
    case = real_cases()[case_id]
    scenario = Scenario(case.family, 0.0, "cores", seed, budget, case=case_id)
    world = build_world(scenario, np.random.default_rng(scenario.seed_sequence))
    space = KnobSpace.from_engine(world.engine, world.cores, bounds=world.bounds)
    defaults = space.defaults()
    name = space.size.name
    default_truth = case.truth(defaults[name])
    levels: dict[int, list[float]] = {size: [] for size in case.sizes}
    alive = list(case.sizes)
    index = 0
    visited: list[float] = []
    per_round = budget // ROUNDS
    for round_index in range(ROUNDS):
        visits = max(1, per_round // (VISIT_SAMPLES * len(alive)))
        for visit in range(visits):
            # Alternate the order so that drift does not favour one end of the grid.
            for size in alive if visit % 2 == 0 else alive[::-1]:
                knobs = {**defaults, name: size}
                for kept in range(VISIT_SAMPLES + 1):
                    seen = world.observe(index, knobs)
                    index += 1
                    visited.append(case.truth(size) / default_truth)
                    if kept:  # the first sample after a change is the lag
                        levels[size].append(math.log(max(seen.throughput, 1e-9)))
        if round_index < ROUNDS - 1:
            medians = {size: statistics.median(levels[size]) for size in alive}
            keep = max(2, math.ceil(len(alive) / 2))
            alive = sorted(alive, key=lambda s: -medians[s])[:keep]
    medians = {size: statistics.median(levels[size]) for size in alive}
    best = max(alive, key=lambda s: medians[s])
    tie = math.log(1.0 - PooltuneConfig().economy_epsilon)
    tied_pick = min(s for s in alive if medians[s] >= medians[best] + tie)
    peak = case.peak()
    return SweepResult(
        case=case_id,
        seed=seed,
        differs=case.differs,
        best_pick=best,
        quality=case.truth(best) / peak,
        tied_pick=tied_pick,
        tied_quality=case.truth(tied_pick) / peak,
        tied_size=case.tied_size,
        mean_cost=float(np.mean(visited)),
        worst=min(visited),
        samples=index,
    )


def _run(job: tuple[str, int, int]) -> SweepResult:
    return sweep_case(*job)


def report(results: Sequence[SweepResult], family: str, budget: int) -> None:
    """One line per family: the bars' shares for the best pick and the tied pick."""
    factor = REAL_SIZE_FACTOR[family]
    differing = [r for r in results if r.differs]
    flat = [r for r in results if not r.differs]

    def share(flags: list[bool]) -> float:
        return sum(flags) / len(flags) if flags else math.nan

    best_differs = share([r.quality >= REAL_QUALITY for r in differing])
    tied_differs = share([r.tied_quality >= REAL_QUALITY for r in differing])
    best_flat = share([r.best_pick <= factor * r.tied_size for r in flat])
    tied_flat = share([r.tied_pick <= factor * r.tied_size for r in flat])
    cost = statistics.median(r.mean_cost for r in results)
    worst = percentile([r.worst for r in results], 0.05)
    samples = statistics.median(r.samples for r in results)
    write(
        f"{family:<10}{budget:>7}{samples:>9.0f}{best_differs:>14.0%}{tied_differs:>14.0%}"
        f"{best_flat:>11.0%}{tied_flat:>11.0%}{cost:>11.2f}{worst:>10.2f}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.climb.resolvable",
        description=(
            "What the real replays resolve: successive halving over each case's measured "
            "sizes within a climb's sample budget, scored on issue 15's real-curve bars."
        ),
    )
    parser.add_argument("--seeds", type=int, default=4, help="seeds per case (default 4)")
    parser.add_argument(
        "--budgets",
        default="60,120,240",
        help="kept samples per sweep, comma-separated (default 60,120,240; a climb runs 300)",
    )
    parser.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    args = parser.parse_args(argv)
    try:
        budgets = [int(b) for b in args.budgets.split(",") if b.strip()]
    except ValueError:
        parser.error(f"--budgets: not a list of integers: {args.budgets!r}")
    if not budgets or min(budgets) < VISIT_SAMPLES * ROUNDS:
        parser.error(f"--budgets: each budget must be at least {VISIT_SAMPLES * ROUNDS}")
    families = replay_families()
    write(
        "What the real replays resolve: successive halving over the measured sizes "
        f"({ROUNDS} rounds, {VISIT_SAMPLES}-sample visits after a lag sample, medians); "
        "share of runs meeting issue 15's bars with the best median (best) and with the "
        "smallest size tied with it (tied); the sweep's own median mean truth and p5 worst "
        "truth over the engine default's"
    )
    table(
        f"{'family':<10}{'budget':>7}{'samples':>9}{'differs: best':>14}{'differs: tied':>14}"
        f"{'flat: best':>11}{'flat: tied':>11}{'mean cost':>11}{'worst p5':>10}"
    )
    for family in (REAL_FAMILY, PAIRED_FAMILY):
        cases = sorted(case for case, f in families.items() if f == family)
        for budget in budgets:
            jobs = [(case, seed, budget) for case in cases for seed in range(args.seeds)]
            if args.workers > 1:
                with multiprocessing.get_context("fork").Pool(args.workers) as pool:
                    results = pool.map(_run, jobs, chunksize=8)
            else:
                results = [_run(job) for job in jobs]
            report(results, family, budget)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
