"""Warm start end to end: does a host the service has never seen start near its optimum?

``python -m benchmarks.warm_start`` (``--quick`` for a smaller run). Everything runs on
127.0.0.1: a fresh PostgreSQL database, the real service under uvicorn, the real agent
loop over simulated servers (virtual clock: nothing sleeps), the real trainer CLI.

1. Fleet 1, COLD: varied simulated workloads (CPU-, IO-, lock-bound and light; 2–32
   cores). Cold means the climber starts from the engine default tuple
   (``thread_pool_size`` = cores): the agents ask the service for nothing, they only
   upload their reports.
2. ``pooltune-trainer train --promote`` on those reports (optionally plus a bundled
   dataset, ``--dataset``), through the promotion gate.
3. Fleet 2, WARM: held-out workloads (drawn from another seed) start from the service's
   recommendation (the promoted model, or the heuristic if the gate refused).
   Control: the same held-out workloads and noise, cold.

Scores (DESIGN.md vocabulary; noise-free throughput of the tuple in force over the peak of
the pool-size curve, since only ``thread_pool_size`` is climbed): T95 in 2-second samples
counted from the climb's first sample (after the agent's 30 s profiling window, the same for
every start), median and p90 with "never" counted as infinite; the first applied tuple's
throughput / peak; final quality = mean over the last 60 samples.

Then the real MariaDB comparison for one sysbench workload with a clear optimum, when
``datasets/mariadb-2core-v1`` exists (:mod:`benchmarks.warm_start_real`): the starts scored
on the held-out workload's measured sweep and, with ``--live``, the agent itself cold and
warm on a fresh MariaDB under that load (about 15 minutes more).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from agents.sim import SimWorkload, random_workload
from agents.sim.workloads import WorkloadKind
from benchmarks import fleet
from benchmarks.climb import T95_SHARE
from benchmarks.fleet import HostResult

KINDS = tuple(kind.value for kind in WorkloadKind)
CORES = (2, 4, 8, 16, 32)
TARGET_T95_RATIO = 5.0
TARGET_FIRST_SHARE, TARGET_HOSTS_SHARE = 0.95, 0.90


def _write(line: str = "") -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def draw_workloads(count: int, *, seed: int) -> list[SimWorkload]:
    """``count`` workloads, the four families in turn, cores from 2 to 32."""
    rng = np.random.default_rng(seed)
    return [
        random_workload(rng, kind=KINDS[i % len(KINDS)], cores=int(rng.choice(CORES)))
        for i in range(count)
    ]


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    # Nearest rank, so that an unreached T95 (inf) stays inf instead of becoming nan.
    rank = max(0, math.ceil(q * len(ordered)) - 1)
    return ordered[rank]


def _samples(value: float) -> str:
    return "never" if math.isinf(value) else f"{value:.0f}"


def summarise(results: Sequence[HostResult]) -> dict[str, float]:
    t95s = [r.t95_samples for r in results]
    shares = [r.first_tuple_share for r in results]
    return {
        "hosts": float(len(results)),
        "t95_median": _quantile(t95s, 0.5),
        "t95_p90": _quantile(t95s, 0.9),
        "t95_reached": sum(math.isfinite(t) for t in t95s) / len(t95s),
        "first_median": float(np.median(shares)),
        "first_p10": _quantile(shares, 0.1),
        "first_within": sum(s >= TARGET_FIRST_SHARE for s in shares) / len(shares),
        "final_quality": float(np.mean([r.final_quality for r in results])),
        "reported": sum(r.reported for r in results) / len(results),
        "converged": sum(r.converged for r in results) / len(results),
    }


def print_fleet(title: str, results: Sequence[HostResult]) -> dict[str, float]:
    figures = summarise(results)
    sources = sorted({r.start_source for r in results})
    _write(f"{title}  ({len(results)} hosts; start source: {', '.join(sources)})")
    _write(
        f"  T95 samples (2 s each): median {_samples(figures['t95_median'])}, "
        f"p90 {_samples(figures['t95_p90'])}, reached by {figures['t95_reached']:.0%}"
    )
    _write(
        f"  first applied tuple / peak: median {figures['first_median']:.3f}, "
        f"p10 {figures['first_p10']:.3f}, ≥ {TARGET_FIRST_SHARE} for "
        f"{figures['first_within']:.0%} of hosts"
    )
    _write(
        f"  final quality (last 60 samples): {figures['final_quality']:.3f}; "
        f"converged {figures['converged']:.0%}, report delivered {figures['reported']:.0%}"
    )
    return figures


def _ratio(cold: float, warm: float) -> str:
    if math.isinf(cold) and math.isinf(warm):
        return "n/a (neither reaches T95)"
    if math.isinf(cold):
        return "∞ (the cold fleet never reaches T95 at this percentile)"
    if math.isinf(warm):
        return "< 1 (the warm fleet never reaches T95 at this percentile)"
    if warm == 0:
        return "∞ (warm T95 = 0: at ≥ 95% of peak from the first climb sample)"
    return f"{cold / warm:.1f}×"


def print_hosts(results: Sequence[HostResult]) -> None:
    _write("    host         kind  cores  conns  start  optimum  first/peak  T95  final")
    for r in results:
        _write(
            f"    {r.name:11s} {r.kind:>5s} {r.cores:6d} {r.connections:6d} {r.start_size:6d} "
            f"{r.optimum_size:8d} {r.first_tuple_share:11.3f} {_samples(r.t95_samples):>4s} "
            f"{r.final_quality:6.3f}"
        )
    for r in results:
        if math.isinf(r.t95_samples) or r.final_quality < T95_SHARE:
            _write(f"    {r.name} sizes from the climb's start: {r.size_trace}")


def simulated_comparison(args: argparse.Namespace, workdir: Path) -> bool:
    began = time.monotonic()
    train_workloads = draw_workloads(args.cold_hosts, seed=args.seed)
    held_out = draw_workloads(args.warm_hosts, seed=args.seed + 1)
    with fleet.live_service(log_path=workdir / "service.log") as service:
        _write(f"service: {service.url} on a fresh PostgreSQL database (dropped at the end)")
        if args.sim_corpus:
            corpus = workdir / "sim-corpus"
            fleet.make_sim_corpus(corpus, workloads=args.sim_corpus, seed=args.seed + 1000)
            line = fleet.import_dataset(service, str(corpus))
            _write(
                f"training data: fleet 1 reports + a simulated corpus of {args.sim_corpus} "
                f"workloads made by `pooltune-trainer make-sim-dataset` ({line})"
            )
        elif args.dataset:
            line = fleet.import_dataset(service, args.dataset, limit=args.dataset_limit)
            _write(f"training data: fleet 1 reports + dataset {args.dataset} ({line})")
        else:
            _write("training data: fleet 1 reports only (no bundled dataset imported)")
        _write(
            "cold = the climber starts from the engine default tuple "
            "(thread_pool_size = cores); no recommendation is asked"
        )
        _write()
        cold_hosts = fleet.build_fleet(
            train_workloads,
            service=service,
            state_root=workdir / "fleet1",
            prefix="cold",
            cold=True,
            seed=args.seed,
        )
        cold = fleet.run_and_score(cold_hosts, samples=args.samples)
        cold_figures = print_fleet("fleet 1, cold (training workloads)", cold)
        if args.verbose:
            print_hosts(cold)

        training = fleet.train_and_promote(
            service, trials=args.trials, seed=args.seed, card_dir=workdir / "cards"
        )
        summary = [
            line.strip()
            for line in training.output.splitlines()
            if line.strip().startswith(("registered", "gate:", "promoted", "Error", "error"))
            or "examples for" in line
        ]
        _write()
        _write(
            f"trainer ({args.trials} Optuna trials, {training.seconds:.0f} s, exit "
            f"{training.returncode}): " + "; ".join(summary)
        )
        if not training.promoted:
            _write("  the model was NOT promoted: fleet 2 gets the service's heuristic")
            if args.verbose:
                _write(training.output)
        _write()

        warm_hosts = fleet.build_fleet(
            held_out,
            service=service,
            state_root=workdir / "fleet2",
            prefix="warm",
            cold=False,
            seed=args.seed + 1,
        )
        warm = fleet.run_and_score(warm_hosts, samples=args.samples)
        warm_figures = print_fleet("fleet 2, warm (held-out workloads)", warm)
        if args.verbose:
            print_hosts(warm)
        control_hosts = fleet.build_fleet(
            held_out,
            service=service,
            state_root=workdir / "control",
            prefix="control",
            cold=True,
            seed=args.seed + 1,
        )
        control = fleet.run_and_score(control_hosts, samples=args.samples)
        control_figures = print_fleet("control: the held-out workloads cold (same noise)", control)
    _write()
    for statistic in ("t95_median", "t95_p90"):
        label = statistic.removeprefix("t95_")
        _write(
            f"T95 {label} cold / warm: fleet 1 / fleet 2 "
            f"{_ratio(cold_figures[statistic], warm_figures[statistic])}; same held-out "
            f"workloads {_ratio(control_figures[statistic], warm_figures[statistic])}"
        )
    t95_ok = warm_figures["t95_median"] * TARGET_T95_RATIO <= cold_figures["t95_median"] and (
        warm_figures["t95_median"] * TARGET_T95_RATIO <= control_figures["t95_median"]
    )
    first_ok = warm_figures["first_within"] >= TARGET_HOSTS_SHARE
    _write(
        f"target warm T95 ≥ {TARGET_T95_RATIO:.0f}× lower than cold (median): "
        f"{'MET' if t95_ok else 'NOT MET'}"
    )
    _write(
        f"target first applied tuple ≥ {TARGET_FIRST_SHARE} of peak for ≥ "
        f"{TARGET_HOSTS_SHARE:.0%} of warm hosts: {'MET' if first_ok else 'NOT MET'} "
        f"({warm_figures['first_within']:.0%})"
    )
    _write(f"simulated part: {time.monotonic() - began:.0f} s")
    return t95_ok and first_ok


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cold-hosts", type=int, default=48, help="fleet 1 size (≥ 30 to train)")
    parser.add_argument("--warm-hosts", type=int, default=40, help="fleet 2 size")
    parser.add_argument("--samples", type=int, default=240, help="2-s samples per host")
    parser.add_argument("--trials", type=int, default=10, help="Optuna trials")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dataset", default="", help="also import this dataset (e.g. sim-v1)")
    parser.add_argument("--dataset-limit", type=int, default=None)
    parser.add_argument(
        "--sim-corpus", type=int, default=0, help="also train on a fresh simulated corpus of N"
    )
    parser.add_argument("--real-dataset", default="mariadb-2core-v1")
    parser.add_argument("--skip-real", action="store_true", help="no real-MariaDB part")
    parser.add_argument(
        "--live",
        action="store_true",
        help="the real part also runs the agent cold and warm on a fresh MariaDB (~15 min)",
    )
    parser.add_argument(
        "--live-seconds", type=float, default=300.0, help="each live agent run, seconds"
    )
    parser.add_argument("--quick", action="store_true", help="32 + 16 hosts, 3 trials")
    parser.add_argument("-v", "--verbose", action="store_true", help="per-host tables")
    args = parser.parse_args(argv)
    if args.quick:
        args.cold_hosts, args.warm_hosts, args.trials = 32, 16, 3
    with tempfile.TemporaryDirectory(prefix="pooltune-warm-") as tmp:
        simulated_comparison(args, Path(tmp))
    _write()
    if not args.skip_real:
        from benchmarks.warm_start_real import real_comparison

        real_comparison(
            args.real_dataset, write=_write, live=args.live, live_seconds=args.live_seconds
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
