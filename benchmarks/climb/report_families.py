"""Issue 15's tables: every family under CV 2–15% from four starts, the moving optimum,
and the replayed real curves. Each fills the figures the done-when checks read."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from benchmarks.climb.metrics import percentile
from benchmarks.climb.replay import real_cases
from benchmarks.climb.report import Figures, fmt_t, median, num, t95_cell, table, write
from benchmarks.climb.run import RunResult
from benchmarks.climb.scenarios import (
    CLIMBER_NAMES,
    FAMILIES,
    PAIRED_FAMILY,
    PGBOUNCER_FAMILY,
    REAL_FAMILY,
    REPLAY_FAMILIES,
    SECONDARY_MATTERS,
    SYNTHETIC_FAMILIES,
    WARM_STARTS,
)

#: Quality bar of the real curves' done-when check, and per replay family the flat-curve
#: size factor (issue 15: 4× for MariaDB; issue 18: 2× for PgBouncer).
REAL_QUALITY = 0.95
REAL_SIZE_FACTOR = {REAL_FAMILY: 4, PGBOUNCER_FAMILY: 2, PAIRED_FAMILY: 4}
#: What each replay family replays, for the table's title.
REPLAYED = {
    REAL_FAMILY: "Real MariaDB curves",
    PGBOUNCER_FAMILY: "Real PgBouncer curves",
    PAIRED_FAMILY: "Real MariaDB curves by paired visits (v4)",
}


def _share(flags: list[bool]) -> float:
    return float(np.mean(flags)) if flags else math.nan


def report_families(results: list[RunResult], figures: Figures) -> None:
    cold: dict[tuple[str, str], list[RunResult]] = defaultdict(list)
    for r in results:
        if r.scenario.cold and not r.scenario.switch:
            cold[(r.climber, r.scenario.family)].append(r)
    _families_table(cold, figures)
    _moving_table(cold, figures)
    for family in REPLAY_FAMILIES:
        _real_table(cold, figures, family)
    for family in REPLAY_FAMILIES:
        _real_warm_table(results, figures, family)


def _families_table(cold: dict[tuple[str, str], list[RunResult]], figures: Figures) -> None:
    write(
        "Every family, cold starts (size 1, cores, 4×cores where listed, 128), CV 2–15% "
        "(real: its own noise)"
    )
    write(
        "  stay: reached 0.95 of the best (T95) and ended there; p5 final: 5th percentile of "
        "the final quality; <½ run: most samples in a row below half the start; settled: no "
        "size change in the last third; 2nd@def: secondary knobs at their defaults at the end"
    )
    table(
        f"{'climber':<12}{'family':<10}{'runs':>5}{'stay':>6}{'p5 final':>9}"
        f"{'T95 med (reach)':>17}{'safety p5':>10}{'<½ run':>7}{'settled':>8}{'2nd@def':>8}"
        f"{'economy':>8}"
    )
    for climber in CLIMBER_NAMES:
        for family in FAMILIES:
            runs = cold.get((climber, family), [])
            if not runs:
                continue
            # The moving family is scored before its change for safety, after it for the rest.
            stay = _share([r.reached_and_stayed for r in runs])
            p5 = percentile([r.quality for r in runs], 0.05)
            safety = percentile([r.safety for r in runs], 0.05)
            streak = max(r.below_half_streak for r in runs)
            settled = _share([r.settled for r in runs])
            defaults = [r.secondary_at_default for r in runs if r.secondary_at_default is not None]
            # Thread economy at CV 5%, as the first suite reports it.
            economies = [r.economy for r in runs if r.economy is not None and r.scenario.cv == 0.05]
            t5 = median(r.t95 for r in runs if r.scenario.cv == 0.05)
            key = f"{climber}.fam.{family}"
            figures.update(
                {
                    f"{key}.stay": stay,
                    f"{key}.p5": p5,
                    f"{key}.t95": median(r.t95 for r in runs),
                    f"{key}.t95_cv5": t5,
                    f"{key}.safety_p5": safety,
                    f"{key}.streak": float(streak),
                    f"{key}.settled": settled,
                    f"{key}.settled_n": float(len(runs)),
                    f"{key}.settled_k": float(sum(r.settled for r in runs)),
                }
            )
            if defaults:
                figures[f"{key}.defaults"] = _share(defaults)
                figures[f"{key}.defaults_n"] = float(len(defaults))
                figures[f"{key}.defaults_k"] = float(sum(defaults))
            if economies:
                figures[f"{key}.economy"] = median(economies)
            gains = [r.secondary_gain for r in runs if r.secondary_gain is not None]
            if gains:
                figures[f"{key}.gain90"] = _share([g >= 0.9 for g in gains])
            write(
                f"{climber:<12}{family:<10}{len(runs):>5}{stay:>6.0%}{num(p5):>9}"
                f"{t95_cell([r.t95 for r in runs]):>17}{num(safety):>10}{streak:>7}"
                f"{settled:>8.0%}"
                f"{(_share(defaults) if defaults else math.nan):>8.0%}"
                f"{num(median(economies) if economies else None):>8}"
            )
        write()
    write("Stall limit that matters (family secondary): share of runs finding ≥ 90% of its gain")
    for climber in CLIMBER_NAMES:
        value = figures.get(f"{climber}.fam.secondary.gain90")
        if value is not None:
            write(f"  {climber:<12}{value:>6.0%}")
    write()
    for climber in CLIMBER_NAMES:
        no_effect = [f for f in SYNTHETIC_FAMILIES + (REAL_FAMILY,) if f not in SECONDARY_MATTERS]
        hits = sum(figures.get(f"{climber}.fam.{f}.defaults_k", 0.0) for f in no_effect)
        total = sum(figures.get(f"{climber}.fam.{f}.defaults_n", 0.0) for f in no_effect)
        if total:
            figures[f"{climber}.noeffect_defaults"] = hits / total


def _moving_table(cold: dict[tuple[str, str], list[RunResult]], figures: Figures) -> None:
    write(
        "Moving optimum (the curve changes 6–45 samples into the run): back at 0.95 of the new best"
    )
    table(f"{'climber':<12}{'runs':>5}{'after the move med (reach)':>28}{'final':>7}")
    for climber in CLIMBER_NAMES:
        runs = cold.get((climber, "moving"), [])
        if not runs:
            continue
        values = [r.reconvergence if r.reconvergence is not None else math.inf for r in runs]
        share = _share([math.isfinite(v) for v in values])
        write(
            f"{climber:<12}{len(runs):>5}{t95_cell(values):>28}"
            f"{num(median(r.quality for r in runs)):>7}"
        )
        figures[f"{climber}.moving.back"] = share
        figures[f"{climber}.moving.median"] = median(values)
    write()


def _real_table(
    cold: dict[tuple[str, str], list[RunResult]], figures: Figures, family: str
) -> None:
    """The replays of one family (figures ``<climber>.<family>.*``)."""
    cases = {k: c for k, c in real_cases().items() if c.family == family}
    factor = REAL_SIZE_FACTOR[family]
    if not any(cold.get((climber, family)) for climber in CLIMBER_NAMES):
        return
    write(
        f"{REPLAYED[family]} replayed ({len(cases)} cases): where a curve differs beyond its "
        f"noise, share of runs ending ≥ {REAL_QUALITY:.2f} of the best (all starts / from the "
        f"default); where it is flat, share ending at most {factor}× the smallest "
        f"size tied with the best; safety p5 from the engine's default (worst / start)"
    )
    table(
        f"{'climber':<12}{'differs: ≥0.95':>16}{'from default':>14}{'flat: size ok':>15}"
        f"{'safety p5 (def)':>16}"
    )
    for climber in CLIMBER_NAMES:
        runs = cold.get((climber, family), [])
        if not runs:
            continue
        differing = [r for r in runs if cases[r.scenario.case].differs]
        flat = [r for r in runs if not cases[r.scenario.case].differs]
        good = _share([r.quality >= REAL_QUALITY for r in differing])
        default = _share(
            [r.quality >= REAL_QUALITY for r in differing if r.scenario.start == "cores"]
        )
        small = _share([r.final_size <= factor * cases[r.scenario.case].tied_size for r in flat])
        # From the engine's default, as a live agent starts where the operator left it.
        safety = percentile([r.safety for r in runs if r.scenario.start == "cores"], 0.05)
        write(f"{climber:<12}{good:>16.0%}{default:>14.0%}{small:>15.0%}{num(safety):>16}")
        figures.update(
            {
                f"{climber}.{family}.differs": good,
                f"{climber}.{family}.default": default,
                f"{climber}.{family}.flat": small,
                f"{climber}.{family}.safety_default": safety,
            }
        )
    runs = cold.get(("pooltune", family), [])
    if runs:
        write()
        write(
            f"pooltune per {family} case: final quality median / p5, final size median (tied size)"
        )
        for case_id in sorted(cases):
            mine = [r for r in runs if r.scenario.case == case_id]
            if not mine:
                continue
            write(
                f"  {case_id:<40}{'differs' if cases[case_id].differs else 'flat':>8}"
                f"{num(median(r.quality for r in mine)):>7}"
                f"{num(percentile([r.quality for r in mine], 0.05)):>7}"
                f"{fmt_t(median(r.final_size for r in mine)):>6} ({cases[case_id].tied_size})"
            )
    write()


def _real_warm_table(results: list[RunResult], figures: Figures, family: str) -> None:
    """The real curves from recommended starts placed as the first suite places them
    (±30% of the best, 4–5× above it, 0.25×), with a plausible range around the start:
    the share ending ≥ 0.95 of the best and reaching it within 60 samples, the median T95.
    The static climber keeps the start: what the recommendation alone is worth."""
    runs: dict[tuple[str, str], list[RunResult]] = defaultdict(list)
    for r in results:
        if r.scenario.family == family and r.scenario.start in WARM_STARTS:
            runs[(r.climber, r.scenario.start)].append(r)
    if not runs:
        return
    write(
        f"{REPLAYED[family]} from warm starts: share ending ≥ 0.95 of the best, share "
        "reaching it within 60 samples, median T95"
    )
    table(f"{'climber':<12}{'start':<11}{'final ≥0.95':>12}{'T95 ≤ 60':>10}{'T95 med':>9}")
    for climber in CLIMBER_NAMES:
        for kind in WARM_STARTS:
            mine = runs.get((climber, kind), [])
            if not mine:
                continue
            final = _share([r.quality >= REAL_QUALITY for r in mine])
            reached = _share([r.t95 <= 60 for r in mine])
            t95 = median(r.t95 for r in mine)
            write(f"{climber:<12}{kind:<11}{final:>12.0%}{reached:>10.0%}{fmt_t(t95):>9}")
            figures.update(
                {
                    f"{climber}.{family}.{kind}.final": final,
                    f"{climber}.{family}.{kind}.reached": reached,
                    f"{climber}.{family}.{kind}.t95": t95,
                }
            )
    write()
