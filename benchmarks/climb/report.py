"""The first suite's tables: cold starts at CV 5%, the noise sweep, a workload switch, warm
starts. Each table also fills the figures the done-when checks read."""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

from benchmarks.climb.run import RunResult
from benchmarks.climb.scenarios import BASE_FAMILIES, CLIMBER_NAMES, CVS, STARTS, WARM_STARTS

Figures = dict[str, float]
Groups = dict[tuple[str, ...], list[RunResult]]


def median(values: Iterable[float]) -> float:
    data = list(values)
    return float(np.median(data)) if data else math.nan


def fmt_t(value: float) -> str:
    return "never" if not math.isfinite(value) else f"{value:.0f}"


def t95_cell(values: Sequence[float]) -> str:
    if not values:
        return "-"
    share = sum(1 for v in values if math.isfinite(v)) / len(values)
    return f"{fmt_t(median(values)):>5} ({share:4.0%})"


def num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def write(line: str = "") -> None:
    sys.stdout.write(line + "\n")


def table(header: str) -> None:
    write(header)
    write("-" * len(header))


def group_first_suite(results: list[RunResult]) -> Groups:
    by: Groups = defaultdict(list)
    for r in results:
        sc = r.scenario
        if sc.family not in BASE_FAMILIES:
            continue
        cold = sc.start in STARTS
        if not sc.switch and cold:
            by[("cv", r.climber, f"{sc.cv:.2f}")].append(r)
            if sc.cv == 0.05:
                by[("main", r.climber, sc.family)].append(r)
                by[("main-all", r.climber)].append(r)
        if sc.start in WARM_STARTS:
            by[(sc.start, r.climber)].append(r)
        if sc.switch:
            by[("switch", r.climber, f"{sc.cv:.2f}")].append(r)
    return by


def report_first_suite(results: list[RunResult], figures: Figures) -> None:
    by = group_first_suite(results)
    _cold_table(by, figures)
    _noise_table(by, figures)
    _switch_table(by, figures)
    _warm_table(by, figures)


def _cold_table(by: Groups, figures: Figures) -> None:
    write("Cold start (far left / core count / far right), CV 5%, drift ±20%")
    table(
        f"{'climber':<12}{'family':<7}{'T95 med (reach)':>17}{'quality':>9}{'regret':>8}"
        f"{'safety':>8}{'economy':>9}{'chg/min':>9}"
    )
    for climber in CLIMBER_NAMES:
        for family in BASE_FAMILIES:
            runs = by.get(("main", climber, family), [])
            if not runs:
                continue
            economies = [r.economy for r in runs if r.economy is not None]
            t_values = [r.t95 for r in runs]
            write(
                f"{climber:<12}{family:<7}{t95_cell(t_values):>17}"
                f"{num(median(r.quality for r in runs)):>9}"
                f"{num(median(r.regret for r in runs)):>8}"
                f"{num(median(r.safety for r in runs)):>8}"
                f"{num(median(economies) if economies else None):>9}"
                f"{num(median(r.changes_per_min for r in runs), 1):>9}"
            )
            figures[f"{climber}.{family}.t95"] = median(t_values)
            figures[f"{climber}.{family}.quality"] = median(r.quality for r in runs)
            if economies:
                figures[f"{climber}.{family}.economy"] = median(economies)
        runs = by.get(("main-all", climber), [])
        if runs:
            figures[f"{climber}.all.t95"] = median(r.t95 for r in runs)
            figures[f"{climber}.all.quality"] = float(np.mean([r.quality for r in runs]))
            figures[f"{climber}.all.safety"] = median(r.safety for r in runs)
            write(
                f"{climber:<12}{'all':<7}{t95_cell([r.t95 for r in runs]):>17}"
                f"{num(figures[f'{climber}.all.quality']):>9}"
                f"{num(median(r.regret for r in runs)):>8}"
                f"{num(figures[f'{climber}.all.safety']):>8}{'':>9}"
                f"{num(median(r.changes_per_min for r in runs), 1):>9}"
            )
        write()


def _noise_table(by: Groups, figures: Figures) -> None:
    write("Noise sweep (first suite, cold starts): quality is the mean over runs")
    table(
        f"{'climber':<12}{'CV':>5}{'T95 med (reach)':>17}{'quality':>9}{'regret':>8}"
        f"{'restarts/h':>12}"
    )
    for climber in CLIMBER_NAMES:
        for cv in CVS:
            runs = by.get(("cv", climber, f"{cv:.2f}"), [])
            if not runs:
                continue
            hours = sum(r.scenario.samples for r in runs) * 2.0 / 3600.0
            restarts_per_hour = sum(r.restarts for r in runs) / hours
            quality = float(np.mean([r.quality for r in runs]))
            write(
                f"{climber:<12}{cv:>5.0%}{t95_cell([r.t95 for r in runs]):>17}{num(quality):>9}"
                f"{num(median(r.regret for r in runs)):>8}{restarts_per_hour:>12.2f}"
            )
            figures[f"{climber}.cv{cv:.2f}.t95"] = median(r.t95 for r in runs)
            figures[f"{climber}.cv{cv:.2f}.quality"] = quality
            figures[f"{climber}.cv{cv:.2f}.restarts_per_hour"] = restarts_per_hour
    write()


def _switch_table(by: Groups, figures: Figures) -> None:
    write("Workload switch at half time (same family, new workload)")
    table(
        f"{'climber':<12}{'CV':>5}{'re-converge med (reach)':>25}{'quality after':>15}"
        f"{'restarts/h before':>19}"
    )
    for climber in CLIMBER_NAMES:
        for cv in CVS:
            runs = by.get(("switch", climber, f"{cv:.2f}"), [])
            if not runs:
                continue
            values = [r.reconvergence if r.reconvergence is not None else math.inf for r in runs]
            hours = sum(r.scenario.samples // 2 for r in runs) * 2.0 / 3600.0
            write(
                f"{climber:<12}{cv:>5.0%}{t95_cell(values):>25}"
                f"{num(float(np.mean([r.quality_after_switch or 0.0 for r in runs]))):>15}"
                f"{sum(r.restarts for r in runs) / hours:>19.2f}"
            )
            figures[f"{climber}.switch{cv:.2f}.reconvergence"] = median(values)
    write()


def _warm_table(by: Groups, figures: Figures) -> None:
    write(
        "Warm starts, CV 5%, plausible range ±50% around the start: within ±30% of the "
        "optimum (warm), 4–5× above it (warm-high), 0.25× (warm-low)"
    )
    table(
        f"{'climber':<12}{'start':<11}{'T95 med (reach)':>17}{'≤60':>6}{'quality':>9}{'safety':>8}"
    )
    for climber in CLIMBER_NAMES:
        for kind in WARM_STARTS:
            runs = by.get((kind, climber), [])
            if not runs:
                continue
            within = float(np.mean([r.t95 <= 60 for r in runs]))
            write(
                f"{climber:<12}{kind:<11}{t95_cell([r.t95 for r in runs]):>17}{within:>6.0%}"
                f"{num(float(np.mean([r.quality for r in runs]))):>9}"
                f"{num(median(r.safety for r in runs)):>8}"
            )
            figures[f"{climber}.{kind}.t95"] = median(r.t95 for r in runs)
            figures[f"{climber}.{kind}.within60"] = within
    write()
