"""Climber benchmark: every climber on the same suite of curves, noise and starts.

Run ``python -m benchmarks.climb`` (``--quick`` for a smoke run, ``--seeds N``,
``--workers N``). Vocabulary from DESIGN.md ("Benchmark vocabulary"):

- Suite: curve A (universal scalability law, rise then fall), curve B (rise then plateau
  with a knee), and simulator workloads (``agents.sim``): CPU-bound, IO-bound,
  lock-bound, light load; hosts of 2–32 cores; knob space = MariaDB's tuned knobs.
- Noise: multiplicative, CV 2/5/10/15%, AR(1) 0.5, rare 0.5× stalls, one-sample lag
  after each change, slow drift of ±20% over 30 minutes. The noise is a function of the
  scenario's seed and the sample index only: every climber sees the same sequence.
- Starts: far left (size 1), at the core count (the engine default), far right (128);
  warm starts within ±30% of the optimum with a plausible range.
- Scores use the noise-free throughput of the tuple in force, relative to the best of
  the whole tuple space (peak): T95 = the first sample after which throughput stays
  ≥ 95% of peak for 90% of the next 30 samples (median over runs, unreached counted as
  never, and the share reaching it); final quality = mean over the last 60 samples;
  regret = mean of 1 − throughput/peak; safety = worst sample / throughput at the start
  tuple; thread economy (plateau curves: B and light load) = final size / smallest size
  reaching 95% of the best; changes/min after T95; re-convergence = T95 counted from a
  workload switch at half time; false restarts per hour of stationary runs.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from agents.climber import RESTART_EVENTS, KnobSpace, Sample, make_climber
from agents.knobs import Engine
from agents.sim import KneeCurve, NoiseConfig, SimServer, ThroughputCurve, UslCurve
from agents.sim.curves import WorkloadCurve, knee_size, optimum_size
from agents.sim.model import SIZE_KNOB
from agents.sim.workloads import random_workload

CLIMBER_NAMES = ("pooltune", "reference", "dotnet", "hellerstein", "static")
FAMILIES = ("A", "B", "cpu", "io", "lock", "light")
PLATEAU_FAMILIES = frozenset({"B", "light"})
CVS = (0.02, 0.05, 0.10, 0.15)
STARTS = ("left", "cores", "right")
CORE_CHOICES = (2, 4, 8, 16, 32)
SAMPLES_PER_MINUTE = 30
T95_SHARE, T95_WINDOW, T95_HOLD = 0.95, 30, 0.9


@dataclass(frozen=True, slots=True)
class Scenario:
    family: str
    cv: float
    start: str
    seed: int
    samples: int
    switch: bool = False

    @property
    def seed_sequence(self) -> list[int]:
        return [
            self.seed,
            FAMILIES.index(self.family),
            int(round(self.cv * 1000)),
            int(self.switch),
        ]


@dataclass(frozen=True, slots=True)
class RunResult:
    climber: str
    scenario: Scenario
    t95: float
    quality: float
    regret: float
    safety: float
    economy: float | None
    changes_per_min: float
    restarts: int
    reconvergence: float | None
    quality_after_switch: float | None
    seconds: float


def make_curve(family: str, rng: np.random.Generator) -> ThroughputCurve:
    cores = int(rng.choice(CORE_CHOICES))
    if family == "A":
        peak_at = math.exp(rng.uniform(math.log(2.0), math.log(80.0)))
        return UslCurve.with_peak_at(
            peak_at,
            serial_fraction=float(rng.uniform(0.0, 0.1)),
            rate=float(rng.uniform(100, 5000)),
            cores=cores,
        )
    if family == "B":
        return KneeCurve(
            rate=float(rng.uniform(100, 5000)),
            knee_size=math.exp(rng.uniform(math.log(1.5), math.log(48.0))),
            sharpness=float(rng.uniform(3.0, 8.0)),
            decline=float(rng.choice([0.0, 0.01, 0.02])),
            cores=cores,
        )
    return WorkloadCurve(random_workload(rng, kind=family, cores=cores))


def t95(normalised: np.ndarray) -> float:
    """First index from which ≥ 90% of the next 30 samples are ≥ 95% of peak; inf if none."""
    good = (normalised >= T95_SHARE).astype(np.float64)
    if good.size < T95_WINDOW:
        return math.inf
    window_share = np.convolve(good, np.ones(T95_WINDOW), mode="valid") / T95_WINDOW
    hits = np.nonzero(window_share >= T95_HOLD)[0]
    return float(hits[0]) if hits.size else math.inf


def run_one(args: tuple[str, Scenario]) -> RunResult:
    climber_name, scenario = args
    began = time.perf_counter()
    rng = np.random.default_rng(scenario.seed_sequence)
    curve = make_curve(scenario.family, rng)
    second = make_curve(scenario.family, rng) if scenario.switch else None
    cores = curve.cores
    space = KnobSpace.from_engine(Engine.MARIADB, cores)
    noise = NoiseConfig(cv=scenario.cv, drift=0.2, drift_period=900)
    server = SimServer(curve, seed=scenario.seed * 7919 + 17, noise=noise)
    start = space.defaults()
    plausible: dict[str, tuple[int, int]] | None = None
    if scenario.start == "left":
        start[SIZE_KNOB] = space.size.low
    elif scenario.start == "right":
        start[SIZE_KNOB] = space.size.high
    elif scenario.start == "warm":
        optimum = optimum_size(curve)
        start[SIZE_KNOB] = space.size.clip(optimum * rng.uniform(0.7, 1.3))
        plausible = {
            SIZE_KNOB: (
                space.size.clip(start[SIZE_KNOB] / 1.5),
                space.size.clip(start[SIZE_KNOB] * 1.5),
            )
        }
    climber = make_climber(climber_name, knob_space=space, cpu_count=cores)
    climber.reset(start, plausible_range=plausible)
    knobs = climber.current_tuple
    total = scenario.samples
    switch_at = total // 2 if second is not None else total
    expected = np.empty(total)
    sizes = np.empty(total)
    changes = np.zeros(total, dtype=bool)
    peak = curve.peak()
    peaks = np.full(total, peak)
    restarts_before_switch = 0
    previous = knobs
    for index in range(total):
        if index == switch_at and second is not None:
            restarts_before_switch = sum(1 for e in climber.events if e.kind in RESTART_EVENTS)
            server.switch_workload(second)
            peaks[index:] = second.peak()
        sampled = server.sample(knobs)
        expected[index] = sampled.expected_throughput
        sizes[index] = knobs[SIZE_KNOB]
        changes[index] = knobs != previous
        previous = knobs
        knobs = climber.step(
            Sample(
                throughput=sampled.throughput,
                connections=sampled.connections,
                latency_ms=sampled.latency_ms,
                knobs=sampled.knobs,
            )
        )
    normalised = expected / peaks
    first = normalised[:switch_at]
    reached = t95(first)
    start_throughput = curve.expected(start)[0]
    safety = float(np.min(expected[:switch_at]) / max(start_throughput, 1e-9))
    tail = first[-60:]
    economy = None
    if scenario.family in PLATEAU_FAMILIES:
        economy = float(sizes[switch_at - 1] / knee_size(curve))
    after = int(reached) if math.isfinite(reached) else switch_at // 2
    minutes = (switch_at - after) / SAMPLES_PER_MINUTE
    changes_per_min = float(np.sum(changes[after:switch_at]) / minutes) if minutes > 0 else 0.0
    reconvergence = quality_after = None
    restarts = sum(1 for e in climber.events if e.kind in RESTART_EVENTS)
    if second is not None:
        post = normalised[switch_at:]
        reconvergence = t95(post)
        quality_after = float(np.mean(post[-60:]))
        restarts = restarts_before_switch
    return RunResult(
        climber=climber_name,
        scenario=scenario,
        t95=reached,
        quality=float(np.mean(tail)),
        regret=float(np.mean(1.0 - first)),
        safety=safety,
        economy=economy,
        changes_per_min=changes_per_min,
        restarts=restarts,
        reconvergence=reconvergence,
        quality_after_switch=quality_after,
        seconds=time.perf_counter() - began,
    )


def build_suite(seeds: int, *, quick: bool) -> list[Scenario]:
    length = 160 if quick else 300
    suite: list[Scenario] = []
    for seed in range(seeds):
        for family in FAMILIES:
            # Main condition: CV 5%, every start for every seed.
            for start in STARTS:
                suite.append(Scenario(family, 0.05, start, seed, length))
            # Noise sweep: starts rotate over seeds.
            for cv in CVS:
                if cv != 0.05:
                    suite.append(Scenario(family, cv, STARTS[seed % 3], seed, length))
            suite.append(Scenario(family, 0.05, "warm", seed, length))
            suite.append(Scenario(family, 0.05, STARTS[seed % 3], seed, 2 * length, switch=True))
            if not quick:
                suite.append(
                    Scenario(family, 0.15, STARTS[seed % 3], seed, 2 * length, switch=True)
                )
    return suite


# --------------------------------------------------------------------------- report
def _median(values: Iterable[float]) -> float:
    data = list(values)
    return float(np.median(data)) if data else math.nan


def _fmt_t(value: float) -> str:
    return "never" if not math.isfinite(value) else f"{value:.0f}"


def _t95_cell(values: Sequence[float]) -> str:
    if not values:
        return "-"
    share = sum(1 for v in values if math.isfinite(v)) / len(values)
    return f"{_fmt_t(_median(values)):>5} ({share:4.0%})"


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def _write(line: str = "") -> None:
    sys.stdout.write(line + "\n")


def report(results: list[RunResult], *, seeds: int, elapsed: float) -> dict[str, float]:
    """Print the tables; return the headline figures used by the acceptance checks."""
    by: dict[tuple[str, ...], list[RunResult]] = defaultdict(list)
    for r in results:
        sc = r.scenario
        cold = sc.start in STARTS
        if not sc.switch and cold:
            by[("cv", r.climber, f"{sc.cv:.2f}")].append(r)
            if sc.cv == 0.05:
                by[("main", r.climber, sc.family)].append(r)
                by[("main-all", r.climber)].append(r)
        if sc.start == "warm":
            by[("warm", r.climber, sc.family)].append(r)
            by[("warm-all", r.climber)].append(r)
        if sc.switch:
            by[("switch", r.climber, f"{sc.cv:.2f}")].append(r)
    figures: dict[str, float] = {}

    _write(f"Climber benchmark: {seeds} seeds, {len(results)} runs, {elapsed:.0f} s")
    _write("Cold start (far left / core count / far right), CV 5%, drift ±20%")
    header = (
        f"{'climber':<12}{'family':<7}{'T95 med (reach)':>17}{'quality':>9}{'regret':>8}"
        f"{'safety':>8}{'economy':>9}{'chg/min':>9}"
    )
    _write(header)
    _write("-" * len(header))
    for climber in CLIMBER_NAMES:
        for family in FAMILIES:
            runs = by.get(("main", climber, family), [])
            if not runs:
                continue
            economies = [r.economy for r in runs if r.economy is not None]
            t_values = [r.t95 for r in runs]
            _write(
                f"{climber:<12}{family:<7}{_t95_cell(t_values):>17}"
                f"{_num(_median(r.quality for r in runs)):>9}"
                f"{_num(_median(r.regret for r in runs)):>8}"
                f"{_num(_median(r.safety for r in runs)):>8}"
                f"{_num(_median(economies) if economies else None):>9}"
                f"{_num(_median(r.changes_per_min for r in runs), 1):>9}"
            )
            figures[f"{climber}.{family}.t95"] = _median(t_values)
            figures[f"{climber}.{family}.quality"] = _median(r.quality for r in runs)
            if economies:
                figures[f"{climber}.{family}.economy"] = _median(economies)
        runs = by.get(("main-all", climber), [])
        if runs:
            figures[f"{climber}.all.t95"] = _median(r.t95 for r in runs)
            figures[f"{climber}.all.quality"] = float(np.mean([r.quality for r in runs]))
            figures[f"{climber}.all.safety"] = _median(r.safety for r in runs)
            _write(
                f"{climber:<12}{'all':<7}{_t95_cell([r.t95 for r in runs]):>17}"
                f"{_num(figures[f'{climber}.all.quality']):>9}"
                f"{_num(_median(r.regret for r in runs)):>8}"
                f"{_num(figures[f'{climber}.all.safety']):>8}{'':>9}"
                f"{_num(_median(r.changes_per_min for r in runs), 1):>9}"
            )
        _write()

    _write("Noise sweep (all families, cold starts): quality is the mean over runs")
    header = (
        f"{'climber':<12}{'CV':>5}{'T95 med (reach)':>17}{'quality':>9}{'regret':>8}"
        f"{'restarts/h':>12}"
    )
    _write(header)
    _write("-" * len(header))
    for climber in CLIMBER_NAMES:
        for cv in CVS:
            runs = by.get(("cv", climber, f"{cv:.2f}"), [])
            if not runs:
                continue
            hours = sum(r.scenario.samples for r in runs) * 2.0 / 3600.0
            restarts_per_hour = sum(r.restarts for r in runs) / hours
            quality = float(np.mean([r.quality for r in runs]))
            t_med = _median(r.t95 for r in runs)
            _write(
                f"{climber:<12}{cv:>5.0%}{_t95_cell([r.t95 for r in runs]):>17}{_num(quality):>9}"
                f"{_num(_median(r.regret for r in runs)):>8}{restarts_per_hour:>12.2f}"
            )
            figures[f"{climber}.cv{cv:.2f}.t95"] = t_med
            figures[f"{climber}.cv{cv:.2f}.quality"] = quality
            figures[f"{climber}.cv{cv:.2f}.restarts_per_hour"] = restarts_per_hour
    _write()

    _write("Workload switch at half time (same family, new workload)")
    header = (
        f"{'climber':<12}{'CV':>5}{'re-converge med (reach)':>25}{'quality after':>15}"
        f"{'restarts/h before':>19}"
    )
    _write(header)
    _write("-" * len(header))
    for climber in CLIMBER_NAMES:
        for cv in CVS:
            runs = by.get(("switch", climber, f"{cv:.2f}"), [])
            if not runs:
                continue
            values = [r.reconvergence if r.reconvergence is not None else math.inf for r in runs]
            hours = sum(r.scenario.samples // 2 for r in runs) * 2.0 / 3600.0
            _write(
                f"{climber:<12}{cv:>5.0%}{_t95_cell(values):>25}"
                f"{_num(float(np.mean([r.quality_after_switch or 0.0 for r in runs]))):>15}"
                f"{sum(r.restarts for r in runs) / hours:>19.2f}"
            )
            figures[f"{climber}.switch{cv:.2f}.reconvergence"] = _median(values)
    _write()

    _write("Warm start within ±30% of the optimum, plausible range ±50%, CV 5%")
    header = f"{'climber':<12}{'T95 med (reach)':>17}{'quality':>9}{'safety':>8}"
    _write(header)
    _write("-" * len(header))
    for climber in CLIMBER_NAMES:
        runs = by.get(("warm-all", climber), [])
        if not runs:
            continue
        _write(
            f"{climber:<12}{_t95_cell([r.t95 for r in runs]):>17}"
            f"{_num(float(np.mean([r.quality for r in runs]))):>9}"
            f"{_num(_median(r.safety for r in runs)):>8}"
        )
        figures[f"{climber}.warm.t95"] = _median(r.t95 for r in runs)
    _write()
    return figures


def acceptance(figures: dict[str, float]) -> list[tuple[str, bool, str]]:
    """The issue's "Done when" checks on the figures (pooltune's default climber)."""
    checks: list[tuple[str, bool, str]] = []
    fam_t95 = {f: figures.get(f"pooltune.{f}.t95", math.inf) for f in FAMILIES}
    checks.append(
        (
            "cold CV5% median T95 ≤ 40 on every family",
            max(fam_t95.values()) <= 40,
            ", ".join(f"{f}={_fmt_t(v)}" for f, v in fam_t95.items()),
        )
    )
    quality = figures.get("pooltune.all.quality", 0.0)
    checks.append(("cold CV5% final quality ≥ 0.97", quality >= 0.97, f"{quality:.3f}"))
    econ = [figures.get(f"pooltune.{f}.economy", math.inf) for f in sorted(PLATEAU_FAMILIES)]
    checks.append(
        (
            "thread economy ≤ 1.25 on plateaus",
            max(econ) <= 1.25,
            ", ".join(f"{e:.2f}" for e in econ),
        )
    )
    safety = figures.get("pooltune.all.safety", 0.0)
    checks.append(("median safety ≥ 0.85", safety >= 0.85, f"{safety:.2f}"))
    reconv = figures.get("pooltune.switch0.05.reconvergence", math.inf)
    checks.append(("re-converges after a switch ≤ 60 (median)", reconv <= 60, _fmt_t(reconv)))
    restarts = figures.get("pooltune.cv0.05.restarts_per_hour", math.inf)
    checks.append(
        ("≤ 1 false restart per stationary hour (CV 5%)", restarts <= 1.0, f"{restarts:.2f}")
    )
    ours = figures.get("pooltune.all.t95", math.inf)
    for anchor in ("dotnet", "reference"):
        if f"{anchor}.all.quality" not in figures:
            continue
        theirs = figures.get(f"{anchor}.all.t95", math.inf)
        ratio = theirs / ours if ours > 0 else math.inf
        better_quality = quality >= figures.get(f"{anchor}.all.quality", 0.0)
        checks.append(
            (
                f"≥ 3× faster median T95 than {anchor}, quality ≥",
                ratio >= 3 and better_quality,
                f"{_fmt_t(theirs)} vs {_fmt_t(ours)} (×{ratio:.1f}), "
                f"quality {figures.get(f'{anchor}.all.quality', 0.0):.3f}",
            )
        )
    q15 = figures.get("pooltune.cv0.15.quality", 0.0)
    t15 = figures.get("pooltune.cv0.15.t95", math.inf)
    r15 = figures.get("pooltune.cv0.15.restarts_per_hour", math.inf)
    checks.append(("CV15% quality ≥ 0.95", q15 >= 0.95, f"{q15:.3f}"))
    checks.append(("CV15% median T95 ≤ 80", t15 <= 80, _fmt_t(t15)))
    checks.append(("CV15% drift mistaken for a change ≤ 1/h", r15 <= 1.0, f"{r15:.2f}"))
    warm = figures.get("pooltune.warm.t95", math.inf)
    checks.append(("warm start median T95 ≤ 10", warm <= 10, _fmt_t(warm)))
    return checks


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.climb", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--seeds", type=int, default=30, help="seeds per scenario (default 30)")
    parser.add_argument(
        "--quick", action="store_true", help="short smoke run (3 seeds, short runs)"
    )
    parser.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    parser.add_argument("--climbers", default=",".join(CLIMBER_NAMES), help="comma-separated names")
    args = parser.parse_args(argv)
    seeds = 3 if args.quick and args.seeds == 30 else args.seeds
    climbers = [c.strip() for c in args.climbers.split(",") if c.strip()]
    suite = build_suite(seeds, quick=args.quick)
    jobs = [(climber, scenario) for scenario in suite for climber in climbers]
    began = time.perf_counter()
    if args.workers > 1:
        with multiprocessing.get_context("fork").Pool(args.workers) as pool:
            results = pool.map(run_one, jobs, chunksize=16)
    else:
        results = [run_one(job) for job in jobs]
    figures = report(results, seeds=seeds, elapsed=time.perf_counter() - began)
    if "pooltune" in climbers:
        _write("Done-when checks (pooltune)")
        for label, ok, detail in acceptance(figures):
            _write(f"  [{'ok' if ok else 'NO'}] {label}: {detail}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
