"""How a live case is scored from its raw samples (what ``--json`` records), so that a run
and its ``--rescore`` print the same figures. Definitions: docs/lab.md."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.sweep import NOISE_Z, Point, best_value, smallest_within_noise, within_noise
from benchmarks.live.agent_runs import climb_ended
from benchmarks.live.cases import SAMPLE_S
from benchmarks.scoring import first_sustained

#: Samples at a fixed size are autocorrelated (drift, background flushes): their standard
#: error is wider than stdev/sqrt(n) by about this much (seen on this machine's sweeps).
AUTOCORRELATION_INFLATION = 1.5
#: Samples in the rolling mean used for T95 and for the sustained-drop check (10 s).
ROLLING = 5
#: Samples T95 looks ahead (60 s), and the share of them that must hold.
T95_HORIZON, T95_HOLD = int(60 / SAMPLE_S), 0.9
TARGET_SHARE, TARGET_S, TARGET_FLOOR = 0.95, 300.0, 0.85


@dataclass
class LiveCaseScore:
    """The figures of one live case: the sweep's oracle and default, the agent's run."""

    workload: str
    clients: int
    oracle_size: int
    oracle_tps: float
    default_size: int
    default_tps: float
    #: Two standard errors of one size's mean in the sweep, relative (the median over sizes).
    noise: float
    #: The default is below the oracle by more than the noise of both means.
    differs: bool
    final_tps: float
    final_size: int
    #: Final size / oracle size, measured side by side after the run.
    ab_ratio: float
    #: The sweep's mean at the final size / the oracle.
    sweep_final: float
    t95_s: float | None
    knob_changes: int
    #: Worst 10-s mean / the first 10 s of the agent's run (includes the server's drift).
    worst_drop: float
    #: The worst size the agent stayed at, by the sweep: its mean there / at the start size.
    dip: float = 1.0
    #: The smallest size the sweep ties with the best (within the autocorrelated noise).
    smallest_tied: int = 0
    #: The same safety figure for the server alone at the default size, no agent (None:
    #: no control was run): how much of ``worst_drop`` is the server's own drift.
    control_drop: float | None = None
    #: The climb had ended (held a tuple) when the run stopped (None: the record keeps no
    #: climber events). Where it had not, the final size is the one in force mid-search.
    settled: bool | None = None

    @property
    def economy(self) -> float:
        """Final size / the smallest size tied with the best (thread economy on flat
        curves: at most 2 is the done-when bar)."""
        return self.final_size / self.smallest_tied if self.smallest_tied else math.nan

    @property
    def gain(self) -> float:
        return self.oracle_tps / self.default_tps - 1.0

    @property
    def verdict(self) -> str:
        if self.dip < TARGET_FLOOR:
            return "DROP"
        if not self.differs:
            return "flat"
        return "met" if self.t95_s is not None and self.t95_s <= TARGET_S else "MISSED"


def sweep_points(samples: Mapping[Any, Sequence[float]]) -> dict[int, Point]:
    """The sweep's points from recorded samples per size (keys may be strings, as in JSON)."""
    return {
        int(size): Point(value=int(size), samples=tuple(values))
        for size, values in samples.items()
        if values
    }


def relative_se(point: Point) -> float:
    """Standard error of ``point``'s mean relative to the mean, autocorrelation-inflated."""
    if point.count < 2 or not point.mean > 0:
        return math.inf
    return AUTOCORRELATION_INFLATION * point.sem / point.mean


def sweep_noise(points: Mapping[int, Point]) -> float:
    """Two standard errors of a size's mean, relative: the median over the sizes."""
    return 2 * statistics.median(relative_se(point) for point in points.values())


def beyond_noise(default: Point, oracle: Point) -> bool:
    """The sweep's noise test (:func:`agents.sweep.within_noise`) with the standard errors
    inflated for autocorrelation."""
    return not within_noise(default, oracle, z=NOISE_Z * AUTOCORRELATION_INFLATION)


def rolling(series: Sequence[float], width: int = ROLLING) -> list[float]:
    return [statistics.fmean(series[i : i + width]) for i in range(len(series) - width + 1)]


def safety(series: Sequence[float]) -> float:
    """Worst 10-s mean / the first 10 s of ``series`` (1 when too short to tell)."""
    smooth = rolling(series)
    start = statistics.fmean(series[:ROLLING]) if series else 0.0
    return min(smooth) / start if smooth and start > 0 else 1.0


def worst_window(series: Sequence[float]) -> int | None:
    """Where :func:`safety`'s worst 10 s begin: the index of their first sample (None
    when the series is shorter than 10 s)."""
    smooth = rolling(series)
    return min(range(len(smooth)), key=smooth.__getitem__) if smooth else None


def rolling_t95_s(series: Sequence[float], target: float) -> float | None:
    """T95 on the 10-s rolling mean: the first time after which it stays ≥ 95% of ``target``
    for 90% of the next 60 s (or of the rest of the run)."""
    index = first_sustained(
        rolling(series),
        TARGET_SHARE * target,
        window=T95_HORIZON,
        hold=T95_HOLD,
        partial_window=True,
    )
    return None if index is None else index * SAMPLE_S


def sweep_at(oracle: Mapping[int, float], size: int) -> float:
    """The sweep's mean throughput at ``size``, log-linear between measured sizes."""
    points = sorted(oracle)
    return float(
        np.interp(
            math.log(max(size, 1)), [math.log(p) for p in points], [oracle[p] for p in points]
        )
    )


def dip(sizes: Sequence[int], oracle: Mapping[int, float], start_size: int) -> float:
    """The worst size the agent stayed at (≥ 2 samples, 4 s, after the one that mixes two
    sizes), scored by the interleaved sweep's mean there / at the start size: what the
    agent's choice cost, free of the server's drift, which a ratio of raw samples is not."""
    reference = sweep_at(oracle, start_size)
    worst = 1.0
    start = 0
    for index in range(1, len(sizes) + 1):
        if index < len(sizes) and sizes[index] == sizes[start]:
            continue
        if index - start - 1 >= 2 and reference > 0:
            worst = min(worst, sweep_at(oracle, sizes[start]) / reference)
        start = index
    return worst


def score_case(workload: str, clients: int, case: Mapping[str, Any]) -> LiveCaseScore:
    """A case's figures from its raw samples (what ``--json`` writes)."""
    points = sweep_points(case["sweep"])
    oracle = {size: point.mean for size, point in points.items()}
    oracle_size = best_value(list(points.values()))
    assert oracle_size is not None, "a case without sweep samples"
    series: list[float] = case["agent"]
    sizes: list[int] = case["agent_sizes"]
    default_size = int(case.get("default_size", 2))
    default_tps = float(case.get("default_tps", oracle.get(default_size, math.nan)))
    default_point = points.get(default_size) or Point(
        value=default_size, samples=tuple(case.get("default_samples") or (default_tps,))
    )
    tail = series[-int(60 / SAMPLE_S) :]
    control = case.get("control")
    return LiveCaseScore(
        workload=workload,
        clients=clients,
        oracle_size=oracle_size,
        oracle_tps=oracle[oracle_size],
        default_size=default_size,
        default_tps=default_tps,
        noise=sweep_noise(points),
        differs=beyond_noise(default_point, points[oracle_size]),
        final_tps=statistics.fmean(tail) if tail else 0.0,
        final_size=int(case["final_size"]),
        ab_ratio=float(case["ab_ratio"]),
        sweep_final=sweep_at(oracle, int(case["final_size"])) / oracle[oracle_size],
        # Scored by the sweep at the size in force: the server's drift moves raw samples
        # by ±20% over minutes, which would make or break 95% on its own.
        t95_s=rolling_t95_s([sweep_at(oracle, size) for size in sizes], oracle[oracle_size]),
        knob_changes=int(
            case.get("knob_changes", sum(a != b for a, b in zip(sizes, sizes[1:], strict=False)))
        ),
        worst_drop=safety(series),
        dip=dip(sizes, oracle, sizes[0] if sizes else default_size),
        smallest_tied=smallest_within_noise(
            list(points.values()), z=NOISE_Z * AUTOCORRELATION_INFLATION
        )
        or oracle_size,
        control_drop=safety(control) if control else None,
        settled=climb_ended(case["climber_events"]) if "climber_events" in case else None,
    )


@dataclass(frozen=True)
class RunFigures:
    """One agent run of a case, scored by the case's sweep: where it started and ended
    (shares of the oracle's mean), T95, the side-by-side check and its knob changes."""

    start_size: int
    start_share: float
    t95_s: float | None
    final_size: int
    final_share: float
    ab_ratio: float
    knob_changes: int


def run_figures(workload: str, clients: int, case: Mapping[str, Any]) -> RunFigures:
    """:class:`RunFigures` of one recorded run (the start is scored by the sweep's mean
    there, so a start at the oracle reads 1.00 whatever the server did at the time)."""
    result = score_case(workload, clients, case)
    oracle = {size: point.mean for size, point in sweep_points(case["sweep"]).items()}
    start = int(case.get("start_size", case["default_size"]))
    return RunFigures(
        start_size=start,
        start_share=sweep_at(oracle, start) / result.oracle_tps,
        t95_s=result.t95_s,
        final_size=result.final_size,
        final_share=result.sweep_final,
        ab_ratio=result.ab_ratio,
        knob_changes=result.knob_changes,
    )


def done_when(results: Sequence[LiveCaseScore]) -> list[tuple[bool, str]]:
    """The live done-when checks over ``results``: where the sweep differs beyond its noise
    the agent reaches 95% of the oracle within 5 minutes (T95) and ends at ≥ 95% of it (by
    the sweep at its final size); on flat curves it ends at no more than twice the smallest
    size tied with the best; everywhere the worst 10-s mean stays ≥ 0.8 of the start (with
    the server's own figure, no agent, beside it when a control was run)."""
    checks: list[tuple[bool, str]] = []
    for r in results:
        name = f"{r.workload} x{r.clients}"
        # Said, not excused: the five minutes are the bar's; a climb still searching then
        # is scored on the size it had in force.
        unended = " (the climb had not ended)" if r.settled is False else ""
        if r.differs:
            reached = r.t95_s is not None and r.t95_s <= TARGET_S
            t95 = "never" if r.t95_s is None else f"{r.t95_s:.0f} s"
            checks.append((reached, f"{name}: 95% of the oracle within 5 min (T95 {t95})"))
            checks.append(
                (
                    r.sweep_final >= TARGET_SHARE,
                    f"{name}: ends at {r.sweep_final:.2f} of it{unended}",
                )
            )
        else:
            checks.append(
                (
                    r.economy <= 2.0,
                    f"{name} (flat): final size {r.final_size} ≤ 2 × smallest tied "
                    f"{r.smallest_tied} ({r.economy:.1f}×){unended}",
                )
            )
        control = "" if r.control_drop is None else f" (no agent: {r.control_drop:.2f})"
        checks.append((r.worst_drop >= 0.8, f"{name}: safety {r.worst_drop:.2f} ≥ 0.8{control}"))
    return checks
