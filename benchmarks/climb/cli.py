"""``python -m benchmarks.climb``: run the suite over worker processes and print the tables
and the done-when checks."""

from __future__ import annotations

import argparse
import multiprocessing
import time
from collections.abc import Sequence

from benchmarks.climb.checks import first_suite_checks, noisy_world_checks, pgbouncer_checks
from benchmarks.climb.replay import replay_families
from benchmarks.climb.report import Figures, report_first_suite, write
from benchmarks.climb.report_families import report_families
from benchmarks.climb.run import RunResult, run_one
from benchmarks.climb.scenarios import CLIMBER_NAMES, FAMILIES, build_suite


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.climb",
        description="Climber benchmark: every climber on the same curves, noise and starts.",
    )
    parser.add_argument("--seeds", type=int, default=30, help="seeds per scenario (default 30)")
    parser.add_argument(
        "--quick", action="store_true", help="short smoke run (3 seeds, short runs)"
    )
    parser.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    parser.add_argument("--climbers", default=",".join(CLIMBER_NAMES), help="comma-separated names")
    parser.add_argument(
        "--families", default=",".join(FAMILIES), help="comma-separated families (default all)"
    )
    args = parser.parse_args(argv)
    seeds = 3 if args.quick and args.seeds == 30 else args.seeds
    climbers = [c.strip() for c in args.climbers.split(",") if c.strip()]
    families = {f.strip() for f in args.families.split(",") if f.strip()}
    unknown = families - set(FAMILIES)
    if unknown:
        parser.error(f"unknown families {sorted(unknown)}; known: {', '.join(FAMILIES)}")
    cases = {case: family for case, family in replay_families().items() if family in families}
    suite = [
        s for s in build_suite(seeds, quick=args.quick, real_cases=cases) if s.family in families
    ]
    jobs = [(climber, scenario) for scenario in suite for climber in climbers]
    began = time.perf_counter()
    results: list[RunResult]
    if args.workers > 1:
        with multiprocessing.get_context("fork").Pool(args.workers) as pool:
            results = pool.map(run_one, jobs, chunksize=16)
    else:
        results = [run_one(job) for job in jobs]
    elapsed = time.perf_counter() - began
    write(f"Climber benchmark: {seeds} seeds, {len(results)} runs, {elapsed:.0f} s")
    figures: Figures = {}
    report_first_suite(results, figures)
    report_families(results, figures)
    if "pooltune" in climbers:
        write("Done-when checks (pooltune)")
        checks = first_suite_checks(figures) + noisy_world_checks(figures)
        for label, ok, detail in checks + pgbouncer_checks(figures):
            write(f"  [{'ok' if ok else 'NO'}] {label}: {detail}")
    return 0
