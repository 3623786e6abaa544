"""The done-when checks on the figures (pooltune's default climber): the first suite's, then
issue 15's, each ``[ok]`` or ``[NO]`` with the figure."""

from __future__ import annotations

import math

from benchmarks.climb.report import Figures, fmt_t
from benchmarks.climb.scenarios import (
    BASE_FAMILIES,
    CVS,
    MARIADB_FAMILIES,
    PAIRED_FAMILY,
    PLATEAU_FAMILIES,
    REAL_FAMILY,
)

Check = tuple[str, bool, str]
#: Baselines the noise sweep compares with (the static pool is not a climber).
BASELINES = ("reference", "dotnet", "hellerstein")


def first_suite_checks(figures: Figures) -> list[Check]:
    checks: list[Check] = []
    fam_t95 = {f: figures.get(f"pooltune.{f}.t95", math.inf) for f in BASE_FAMILIES}
    checks.append(
        (
            "cold CV5% median T95 ≤ 40 on every family",
            max(fam_t95.values()) <= 40,
            ", ".join(f"{f}={fmt_t(v)}" for f, v in fam_t95.items()),
        )
    )
    quality = figures.get("pooltune.all.quality", 0.0)
    checks.append(("cold CV5% final quality ≥ 0.97", quality >= 0.97, f"{quality:.3f}"))
    econ = {
        f: figures.get(f"pooltune.{f}.economy", figures.get(f"pooltune.fam.{f}.economy", math.inf))
        for f in sorted(PLATEAU_FAMILIES)
    }
    checks.append(
        (
            "thread economy ≤ 1.25 on plateaus",
            max(econ.values()) <= 1.25,
            ", ".join(f"{f}={e:.2f}" for f, e in econ.items()),
        )
    )
    safety = figures.get("pooltune.all.safety", 0.0)
    checks.append(("median safety ≥ 0.85", safety >= 0.85, f"{safety:.2f}"))
    reconv = figures.get("pooltune.switch0.05.reconvergence", math.inf)
    checks.append(("re-converges after a switch ≤ 60 (median)", reconv <= 60, fmt_t(reconv)))
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
                f"{fmt_t(theirs)} vs {fmt_t(ours)} (×{ratio:.1f}), "
                f"quality {figures.get(f'{anchor}.all.quality', 0.0):.3f}",
            )
        )
    q15 = figures.get("pooltune.cv0.15.quality", 0.0)
    t15 = figures.get("pooltune.cv0.15.t95", math.inf)
    r15 = figures.get("pooltune.cv0.15.restarts_per_hour", math.inf)
    checks.append(("CV15% quality ≥ 0.95", q15 >= 0.95, f"{q15:.3f}"))
    checks.append(("CV15% median T95 ≤ 80", t15 <= 80, fmt_t(t15)))
    checks.append(("CV15% drift mistaken for a change ≤ 1/h", r15 <= 1.0, f"{r15:.2f}"))
    warm = figures.get("pooltune.warm.t95", math.inf)
    checks.append(("warm start (±30%) median T95 ≤ 10", warm <= 10, fmt_t(warm)))
    return checks


def _families(figures: Figures, suffix: str, *, exclude: tuple[str, ...] = ()) -> dict[str, float]:
    return {
        f: figures[f"pooltune.fam.{f}.{suffix}"]
        for f in MARIADB_FAMILIES
        if f not in exclude and f"pooltune.fam.{f}.{suffix}" in figures
    }


def _worst(values: dict[str, float], *, low: bool = True) -> str:
    if not values:
        return "no runs"
    ordered = sorted(values.items(), key=lambda item: item[1], reverse=not low)
    return ", ".join(f"{f}={v:.2f}" for f, v in ordered)


def noisy_world_checks(figures: Figures) -> list[Check]:
    """Issue 15's done-when items."""
    checks: list[Check] = []
    stay = _families(figures, "stay", exclude=("moving", REAL_FAMILY))
    checks.append(
        (
            "every family, CV ≤ 15%: ≥ 97% of cold runs reach 0.95 of the best and stay",
            bool(stay) and min(stay.values()) >= 0.97,
            _worst(stay),
        )
    )
    p5 = _families(figures, "p5", exclude=("moving", REAL_FAMILY))
    checks.append(
        (
            "every family, CV ≤ 15%: p5 final quality ≥ 0.90",
            bool(p5) and min(p5.values()) >= 0.90,
            _worst(p5),
        )
    )
    t5 = figures.get("pooltune.cv0.05.t95", math.inf)
    checks.append(("median T95 ≤ 20 samples at CV 5%", t5 <= 20, fmt_t(t5)))
    for cv in CVS:
        ours_t = figures.get(f"pooltune.cv{cv:.2f}.t95", math.inf)
        ours_q = figures.get(f"pooltune.cv{cv:.2f}.quality", 0.0)
        rivals = [
            (
                figures.get(f"{b}.cv{cv:.2f}.t95", math.inf),
                figures.get(f"{b}.cv{cv:.2f}.quality"),
                b,
            )
            for b in BASELINES
            if f"{b}.cv{cv:.2f}.quality" in figures
        ]
        if not rivals:
            continue
        best_t, best_q, name = min(rivals, key=lambda item: item[0])
        ok = ours_t <= best_t and ours_q >= (best_q or 0.0)
        checks.append(
            (
                f"CV {cv:.0%}: median T95 no slower than the fastest baseline, quality ≥",
                ok,
                f"{fmt_t(ours_t)} vs {name} {fmt_t(best_t)}; quality {ours_q:.3f} vs "
                f"{best_q or 0.0:.3f}",
            )
        )
    back = figures.get("pooltune.moving.back", 0.0)
    after = figures.get("pooltune.moving.median", math.inf)
    checks.append(
        (
            "moving optimum: ≥ 95% back at 0.95 of the new best, median ≤ 40 after the move",
            back >= 0.95 and after <= 40,
            f"{back:.0%}, median {fmt_t(after)}",
        )
    )
    safety = _families(figures, "safety_p5")
    checks.append(
        (
            "safety p5 ≥ 0.6 on every family",
            bool(safety) and min(safety.values()) >= 0.6,
            _worst(safety),
        )
    )
    streak = _families(figures, "streak")
    checks.append(
        (
            "no run below 0.5 of its start for more than 2 samples in a row",
            bool(streak) and max(streak.values()) <= 2,
            ", ".join(f"{f}={v:.0f}" for f, v in streak.items() if v > 2) or "none",
        )
    )
    defaults = figures.get("pooltune.noeffect_defaults", 0.0)
    checks.append(
        (
            "secondary knobs without effect end at their defaults in ≥ 95% of runs",
            defaults >= 0.95,
            f"{defaults:.1%}",
        )
    )
    gain = figures.get("pooltune.fam.secondary.gain90", 0.0)
    checks.append(
        (
            "a stall limit that matters: ≥ 90% of its gain found in ≥ 90% of runs",
            gain >= 0.90,
            f"{gain:.0%}",
        )
    )
    settled_k = sum(figures.get(f"pooltune.fam.{f}.settled_k", 0.0) for f in MARIADB_FAMILIES)
    settled_n = sum(figures.get(f"pooltune.fam.{f}.settled_n", 0.0) for f in MARIADB_FAMILIES)
    settled = settled_k / settled_n if settled_n else 0.0
    checks.append(
        (
            "≥ 95% of stationary runs make no size change in their last third",
            settled >= 0.95,
            f"{settled:.1%}; " + _worst(_families(figures, "settled")).split(", ")[0],
        )
    )
    for kind, label in (("warm-high", "4–5×"), ("warm-low", "0.25×")):
        within = figures.get(f"pooltune.{kind}.within60", 0.0)
        t = figures.get(f"pooltune.{kind}.t95", math.inf)
        checks.append(
            (
                f"wrong warm start {label}: ≥ 90% reach 0.95 within 60 samples, median T95 ≤ 30",
                within >= 0.90 and t <= 30,
                f"{within:.0%}, median {fmt_t(t)}",
            )
        )
    checks += real_curve_checks(figures, REAL_FAMILY, "real")
    if f"pooltune.{PAIRED_FAMILY}.differs" in figures:
        checks += real_curve_checks(figures, PAIRED_FAMILY, "real (v4, paired visits)")
    return checks


def real_curve_checks(figures: Figures, family: str, label: str) -> list[Check]:
    """Issue 15's real-curve bars on one replay family: where a curve differs beyond its
    noise, final ≥ 0.95 of the best in ≥ 90% of runs (all starts, and from the default);
    where it is flat, the final size ≤ 4× the smallest size tied with the best."""
    differs = figures.get(f"pooltune.{family}.differs", 0.0)
    default = figures.get(f"pooltune.{family}.default", 0.0)
    flat = figures.get(f"pooltune.{family}.flat", 0.0)
    return [
        (
            f"{label} curves that differ: final ≥ 0.95 of the best in ≥ 90% (all starts, default)",
            differs >= 0.90 and default >= 0.90,
            f"{differs:.0%}, from the default {default:.0%}",
        ),
        (
            f"{label} flat curves: final size ≤ 4× the smallest size tied with the best (≥ 95%)",
            flat >= 0.95,
            f"{flat:.0%}",
        ),
    ]


def pgbouncer_checks(figures: Figures) -> list[Check]:
    """Issue 18's live bars, read on the replayed PgBouncer sweeps (every run, not every
    case: a replay is one of many runs a live case could have been)."""
    if "pooltune.pgbouncer.differs" not in figures:
        return []
    differs = figures["pooltune.pgbouncer.differs"]
    flat = figures["pooltune.pgbouncer.flat"]
    safety = figures.get("pooltune.pgbouncer.safety_default", 0.0)
    return [
        (
            "PgBouncer replays that differ: final ≥ 0.95 of the best in ≥ 90% (all starts)",
            differs >= 0.90,
            f"{differs:.0%}, from the default 20 {figures['pooltune.pgbouncer.default']:.0%}",
        ),
        (
            "PgBouncer flat replays: final size ≤ 2× the smallest size tied with the best (≥ 95%)",
            flat >= 0.95,
            f"{flat:.0%}",
        ),
        (
            "PgBouncer replays from the default 20: safety p5 ≥ 0.8",
            safety >= 0.8,
            f"{safety:.2f}",
        ),
    ]
