"""The live benchmark's tables: one row per case, and cold vs warm on the same sweep."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks.live.scoring import LiveCaseScore, RunFigures, run_figures

VERDICTS = (
    "verdict: met / MISSED = reached 95% of the oracle within 5 min or not, where the sweep"
    " differs beyond its noise; flat = it does not; DROP = the agent stayed 4 s or more at a"
    " size the sweep puts below 0.85 of the start size (dip). worst = worst 10-s mean / the"
    " first 10 s, which includes the server's own drift; alone = the same figure for the"
    " server at the default size with no agent (--control)."
)


def print_table(results: Sequence[LiveCaseScore]) -> None:
    header = (
        f"{'workload':<13}{'clients':>8}{'oracle':>12}{'default':>11}{'gain':>7}{'noise':>7}"
        f"{'final':>11}{'/oracle':>9}{'/default':>9}{'sweep':>7}{'A/B':>6}{'T95 s':>7}"
        f"{'changes':>8}{'worst':>7}{'alone':>6}{'dip':>6}  verdict"
    )
    print(header + "   (point_select, hot_row_updates in queries/s, the others in transactions/s)")
    print("-" * len(header))
    for r in results:
        t95_text = "-" if r.t95_s is None else f"{r.t95_s:.0f}"
        alone = "-" if r.control_drop is None else f"{r.control_drop:.2f}"
        print(
            f"{r.workload:<13}{r.clients:>8}{r.oracle_tps:>8.0f}@{r.oracle_size:<3}"
            f"{r.default_tps:>8.0f}@{r.default_size:<2}{r.gain:>+7.0%}{r.noise:>7.1%}"
            f"{r.final_tps:>8.0f}@{r.final_size:<2}"
            f"{r.final_tps / r.oracle_tps:>9.2f}{r.final_tps / r.default_tps:>9.2f}"
            f"{r.sweep_final:>7.2f}{r.ab_ratio:>6.2f}{t95_text:>7}{r.knob_changes:>8}"
            f"{r.worst_drop:>7.2f}{alone:>6}{r.dip:>6.2f}  {r.verdict}"
        )


def print_warm_comparison(
    key: str, cold: Sequence[Mapping[str, Any]], warm: Sequence[Mapping[str, Any]]
) -> None:
    """Cold vs warm on the same server and sweep, a row per run in the order they ran: the
    start's throughput by the sweep, T95, the final size by the sweep and side by side, the
    knob changes; with repeats, each arm's median and range of T95, start/oracle and
    final/oracle."""
    workload, _, clients = key.rpartition("x")
    print(
        f"{'run':<7} {'start':>6} {'source':>17} {'start/oracle':>12} {'T95 s':>6} "
        f"{'final':>6} {'sweep@final':>11} {'A/B':>5} {'changes':>7}"
    )
    arms: dict[str, list[RunFigures]] = {}
    for label, recorded in (("cold", cold), ("warm", warm)):
        arms[label] = [run_figures(workload, int(clients), case) for case in recorded]
        for index, (case, run) in enumerate(zip(recorded, arms[label], strict=True)):
            name = label + (f"-{index + 1}" if len(recorded) > 1 else "")
            t95_text = "-" if run.t95_s is None else f"{run.t95_s:.0f}"
            print(
                f"{name:<7} {run.start_size:>6} {case.get('start_source', '?'):>17} "
                f"{run.start_share:>12.2f} {t95_text:>6} {run.final_size:>6} "
                f"{run.final_share:>11.2f} {run.ab_ratio:>5.2f} {run.knob_changes:>7}"
            )
    if max(len(cold), len(warm)) > 1:
        print(
            f"{'arm':<5} {'runs':>4}  {'T95 s median [range]':>24}  "
            f"{'start/oracle median [range]':>28}  {'final/oracle median [range]':>28}"
        )
        for label, figures in arms.items():
            print(
                f"{label:<5} {len(figures):>4}  "
                f"{_spread([r.t95_s for r in figures], '.0f'):>24}  "
                f"{_spread([r.start_share for r in figures], '.2f'):>28}  "
                f"{_spread([r.final_share for r in figures], '.2f'):>28}"
            )


def _spread(values: Sequence[float | None], fmt: str) -> str:
    """``median [lowest, highest]``; a missing value (T95 never reached) ranks above all."""
    ranked = sorted(values, key=lambda v: math.inf if v is None else v)
    if not ranked:
        return "-"

    def text(value: float | None) -> str:
        return "never" if value is None else format(value, fmt)

    middle = len(ranked) // 2
    if len(ranked) % 2:
        median = text(ranked[middle])
    else:
        low, high = ranked[middle - 1], ranked[middle]
        median = "never" if low is None or high is None else format((low + high) / 2, fmt)
    return f"{median} [{text(ranked[0])}, {text(ranked[-1])}]"
