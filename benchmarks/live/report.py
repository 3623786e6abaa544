"""The live benchmark's tables: one row per case, and cold vs warm on the same sweep."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks.live.scoring import LiveCaseScore, score_case, sweep_at, sweep_points

VERDICTS = (
    "verdict: met / MISSED = reached 95% of the oracle within 5 min or not, where the sweep"
    " differs beyond its noise; flat = it does not; DROP = the agent stayed 4 s or more at a"
    " size the sweep puts below 0.85 of the start size (dip). worst = worst 10-s mean / the"
    " first 10 s, which includes the server's own drift."
)


def print_table(results: Sequence[LiveCaseScore]) -> None:
    header = (
        f"{'workload':<13}{'clients':>8}{'oracle':>12}{'default':>11}{'gain':>7}{'noise':>7}"
        f"{'final':>11}{'/oracle':>9}{'/default':>9}{'sweep':>7}{'A/B':>6}{'T95 s':>7}"
        f"{'changes':>8}{'worst':>7}{'dip':>6}  verdict"
    )
    print(header + "   (point_select in queries/s, the others in transactions/s)")
    print("-" * len(header))
    for r in results:
        t95_text = "-" if r.t95_s is None else f"{r.t95_s:.0f}"
        print(
            f"{r.workload:<13}{r.clients:>8}{r.oracle_tps:>8.0f}@{r.oracle_size:<3}"
            f"{r.default_tps:>8.0f}@{r.default_size:<2}{r.gain:>+7.0%}{r.noise:>7.1%}"
            f"{r.final_tps:>8.0f}@{r.final_size:<2}"
            f"{r.final_tps / r.oracle_tps:>9.2f}{r.final_tps / r.default_tps:>9.2f}"
            f"{r.sweep_final:>7.2f}{r.ab_ratio:>6.2f}{t95_text:>7}{r.knob_changes:>8}"
            f"{r.worst_drop:>7.2f}{r.dip:>6.2f}  {r.verdict}"
        )


def print_warm_comparison(key: str, cold: Mapping[str, Any], warm: Mapping[str, Any]) -> None:
    """Cold vs warm on the same server and sweep: the start's throughput by the sweep, T95,
    the final size by the sweep and side by side, the knob changes."""
    workload, _, clients = key.rpartition("x")
    oracle = {size: point.mean for size, point in sweep_points(cold["sweep"]).items()}
    best = max(oracle.values())
    print(
        f"{'run':<5} {'start':>6} {'source':>17} {'start/oracle':>12} {'T95 s':>6} "
        f"{'final':>6} {'sweep@final':>11} {'A/B':>5} {'changes':>7}"
    )
    for label, case in (("cold", cold), ("warm", warm)):
        result = score_case(workload, int(clients), case)
        start = int(case.get("start_size", case["default_size"]))
        t95_text = "-" if result.t95_s is None else f"{result.t95_s:.0f}"
        print(
            f"{label:<5} {start:>6} {case.get('start_source', '?'):>17} "
            f"{sweep_at(oracle, start) / best:>12.2f} {t95_text:>6} {result.final_size:>6} "
            f"{result.sweep_final:>11.2f} {result.ab_ratio:>5.2f} {result.knob_changes:>7}"
        )
