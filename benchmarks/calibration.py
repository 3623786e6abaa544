"""Calibration benchmark: the simulator fitted to every measured curve, and the simulated
corpus's coverage of the real cases.

    python -m benchmarks.calibration [--real mariadb-2core-v1] [--corpus sim-v2]
                                     [--compare sim-v1] [--ablation] [--processes 2]

Per real case: the profile's throughput over the sweep's at the profile's size (far from 1: an
untypical profile window), the curve's noise (median CV of a size's 1-s samples, median
spread of the visit means, share of stall samples), the fit error (median
|log(simulated / measured)| over the sizes), whether it fits within noise (error ≤ CV), the
share of sizes within two standard errors of their mean (a stricter test), and the coverage
by the corpus: the distance to the
nearest simulated workload in the trainer's feature space, its curve's shape error, the
median shape error of the nearest neighbours within the radius, and whether the case is
covered with and without the draws made around its own workload group. Then the secondary
sweeps measured vs simulated, the done-when checks, and the cases that fail with why.
``--ablation`` refits with the simulator's extensions switched off one by one.
See docs/simulator.md.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from trainer.calibration.coverage import (  # noqa: E402
    NEIGHBOURS,
    RADIUS,
    CaseCoverage,
    CorpusIndex,
    case_coverage,
)
from trainer.calibration.fit import CaseFit, FitConfig, fit_cases  # noqa: E402
from trainer.calibration.realcases import RealCase, real_cases  # noqa: E402
from trainer.examples import Example  # noqa: E402
from trainer.sources import datasets  # noqa: E402

#: The done-when share of real cases the calibrated simulator must reproduce within noise.
FIT_TARGET = 0.9


def _own_groups(case: RealCase, index: CorpusIndex) -> set[str]:
    """The corpus groups drawn around the case's workload group (``…:calibrated:<group>``)."""
    suffix = "calibrated:" + case.group.split(":", 1)[-1]
    return {e.group for e in index.examples if e.group.endswith(suffix)}


def corpus_coverage(
    cases: Sequence[RealCase], real_examples: Sequence[Example], corpus: str, neighbours: int
) -> tuple[list[CaseCoverage], list[CaseCoverage]] | None:
    """Coverage of every case by ``corpus``, with and without the case's own draws."""
    try:
        dataset = datasets.load_dataset(corpus)
    except datasets.DatasetError as exc:
        print(f"{corpus}: not available ({exc})")
        return None
    index = CorpusIndex(datasets.examples(dataset))
    by_id = {e.origin.rsplit(":", 1)[-1]: e for e in real_examples}
    with_own, without_own = [], []
    for case in cases:
        example = by_id[case.workload_id]
        with_own.append(case_coverage(case, example, index, neighbours=neighbours))
        own = _own_groups(case, index)
        reduced = index.without(own) if own else index
        without_own.append(case_coverage(case, example, reduced, neighbours=neighbours))
    return with_own, without_own


def _yes(flag: bool) -> str:
    return "yes" if flag else "NO"


def fit_table(
    fits: Sequence[CaseFit],
    cases: Sequence[RealCase],
    coverage: tuple[list[CaseCoverage], list[CaseCoverage]] | None,
) -> None:
    print(
        f"{'real case':<24} {'kind':<5} {'prof/sw':>7} {'CV':>6} {'visits':>6} {'stalls':>6} "
        f"{'fit err':>7} {'fits?':>5} {'≤2SE':>5} | {'NN dist':>7} {'NN err':>6} "
        f"{'k err':>6} {'k≤CV':>5} {'covered':>7} {'w/o own':>7}"
    )
    for index, (fit, case) in enumerate(zip(fits, cases, strict=True)):
        line = (
            f"{fit.workload_id:<24} {case.kind:<5} "
            f"{case.profile_against_sweep(FitConfig().profile_size):7.2f} {fit.noise.cv:6.3f} "
            f"{fit.noise.visit_spread:6.3f} {fit.noise.stall_rate:6.2f} "
            f"{fit.median_error:7.3f} {_yes(fit.within_noise):>5} {fit.sizes_within_se:5.2f} |"
        )
        if coverage is not None:
            cov, alone = coverage[0][index], coverage[1][index]
            line += (
                f" {cov.nearest_distance:7.2f} {cov.nearest_error:6.3f} {cov.median_error:6.3f} "
                f"{cov.matching:5.2f} {_yes(cov.covered):>7} {_yes(alone.covered):>7}"
            )
        print(line)


def secondary_table(fits: Sequence[CaseFit], cases: Sequence[RealCase]) -> None:
    rows = [(f, c, s) for f, c in zip(fits, cases, strict=True) for s in c.secondary]
    if not rows:
        return
    print("\nSecondary knobs at size 2 (not fitted: the fit sees the size curve only)")
    print(f"{'real case':<24} {'knob':<26} {'value':>6} {'measured':>9} {'CV':>6} {'simulated':>9}")
    for fit, case, sweep in rows:
        workload = fit.workload()
        for value, samples in zip(sweep.values, sweep.samples, strict=True):
            knobs = {"thread_pool_size": 2, sweep.knob: int(value)}
            simulated = workload.expected(knobs)[0] / case.statements_per_unit
            mean = float(np.mean(samples))
            cv = float(np.std(samples, ddof=1) / mean) if mean > 0 and samples.size > 1 else 0.0
            print(
                f"{fit.workload_id:<24} {sweep.knob:<26} {int(value):>6} {mean:9.0f} "
                f"{cv:6.2f} {simulated:9.0f}"
            )


def ablation(cases: Sequence[RealCase], processes: int) -> None:
    print("\nAblation: the same fit with the simulator's extensions switched off")
    variants = {
        "sim-v1 model (shared queue, no co-located clients)": FitConfig(
            group_scheduling=False, client_cpu=False
        ),
        "+ co-located load generator": FitConfig(group_scheduling=False),
        "+ group scheduling (the default fit)": FitConfig(),
        "+ stalls fitted": FitConfig(stalls=True),
    }
    for name, config in variants.items():
        fits = fit_cases(cases, config, processes=processes)
        within = np.mean([f.within_noise for f in fits])
        se = np.mean([f.sizes_within_se for f in fits])
        error = np.median([f.median_error for f in fits])
        print(
            f"  {name:<52} within noise {within:5.2f}  sizes within 2 SE {se:5.2f}  "
            f"median fit error {error:.3f}"
        )


def acceptance(
    fits: Sequence[CaseFit],
    coverage: tuple[list[CaseCoverage], list[CaseCoverage]] | None,
) -> list[tuple[str, bool, str]]:
    """The issue's calibration check, and the coverage of the corpus."""
    fitted = sum(f.within_noise for f in fits)
    share = fitted / len(fits) if fits else 0.0
    checks = [
        (
            "≥ 90 % of real cases reproduced within noise (median abs log error ≤ curve CV)",
            share >= FIT_TARGET,
            f"{fitted}/{len(fits)} = {share:.0%}",
        )
    ]
    if coverage is not None:
        covered = sum(c.covered for c in coverage[0])
        checks.append(
            (
                "every real case has simulated neighbours whose curves match within its noise",
                covered == len(coverage[0]),
                f"{covered}/{len(coverage[0])}",
            )
        )
    return checks


def failures(
    fits: Sequence[CaseFit],
    coverage: tuple[list[CaseCoverage], list[CaseCoverage]] | None,
) -> None:
    unfit = [f for f in fits if not f.within_noise]
    print(f"Cases not reproduced within noise: {', '.join(f.workload_id for f in unfit) or 'none'}")
    for fit in unfit:
        print(f"  {fit.workload_id}: fit error {fit.median_error:.3f} > CV {fit.noise.cv:.3f}")
    print("Sizes outside two standard errors of their mean (the shapes the model misses):")
    for fit in fits:
        misses = fit.misses()
        if misses:
            text = ", ".join(
                f"size {int(size)}: measured {measured:.0f}, simulated {simulated:.0f} "
                f"(log error {error:+.2f}, 2 SE {bound:.2f})"
                for size, measured, simulated, error, bound in misses
            )
            print(f"  {fit.workload_id}: {text}")
    if coverage is None:
        return
    for cov in coverage[0]:
        if cov.covered:
            continue
        if not cov.close:
            why = f"no simulated workload within {RADIUS} (nearest at {cov.nearest_distance:.2f})"
        else:
            why = (
                f"the {len(cov.close)} neighbours' curves differ: median shape error "
                f"{cov.median_error:.3f} > CV {cov.cv:.3f} ({cov.matching:.0%} within noise)"
            )
        print(f"  not covered: {cov.workload_id}: {why}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.calibration", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--real", default="mariadb-2core-v1", help="measured dataset")
    parser.add_argument("--corpus", default="sim-v2", help="simulated corpus to check")
    parser.add_argument("--compare", default="sim-v1", help="another corpus ('' skips it)")
    parser.add_argument("--neighbours", type=int, default=NEIGHBOURS)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--ablation", action="store_true", help="refit without extensions")
    args = parser.parse_args(argv)
    real = datasets.load_dataset(args.real)
    cases = real_cases(real)
    real_examples = datasets.examples(real)
    began = time.perf_counter()
    fits = fit_cases(cases, FitConfig(), processes=args.processes)
    fitted_s = time.perf_counter() - began
    coverage = corpus_coverage(cases, real_examples, args.corpus, args.neighbours)
    print(
        f"{args.real}: {len(cases)} cases fitted in {fitted_s:.0f} s; coverage by "
        f"{args.corpus}: {args.neighbours} nearest within a standardised distance of {RADIUS}"
    )
    fit_table(fits, cases, coverage)
    if coverage is not None:
        alone = sum(c.covered for c in coverage[1])
        print(
            f"covered by {args.corpus} without the draws around their own workload group: "
            f"{alone}/{len(cases)}"
        )
    secondary_table(fits, cases)
    if args.compare:
        other = corpus_coverage(cases, real_examples, args.compare, args.neighbours)
        if other is not None:
            covered = sum(c.covered for c in other[0])
            near = np.median([c.nearest_distance for c in other[0]])
            print(
                f"\n{args.compare}: covers {covered}/{len(cases)} real cases "
                f"(median distance to the nearest workload {near:.2f})"
            )
    if args.ablation:
        ablation(cases, args.processes)
    print()
    failures(fits, coverage)
    print("\nDone-when checks (calibration)")
    for label, ok, detail in acceptance(fits, coverage):
        print(f"  [{'ok' if ok else 'NO'}] {label}: {detail}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
