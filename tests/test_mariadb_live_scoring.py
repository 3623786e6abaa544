"""How benchmarks.mariadb_live scores a case (the live run itself is the benchmark)."""

from __future__ import annotations

import dataclasses
import math
import statistics
from pathlib import Path

import pytest

from agents.sweep import Point
from benchmarks.live.scoring import (
    LiveCaseScore,
    dip,
    relative_se,
    rolling,
    rolling_t95_s,
    score_case,
    sweep_at,
)
from benchmarks.scoring import first_sustained


def case(**changes: object) -> LiveCaseScore:
    fields: dict[str, object] = {
        "workload": "read_only",
        "clients": 16,
        "oracle_size": 8,
        "oracle_tps": 1200.0,
        "default_size": 2,
        "default_tps": 1000.0,
        "noise": 0.04,
        "differs": True,
        "final_tps": 1180.0,
        "final_size": 8,
        "ab_ratio": 1.0,
        "sweep_final": 0.98,
        "t95_s": 60.0,
        "knob_changes": 6,
        "worst_drop": 0.97,
        "dip": 0.95,
    }
    fields.update(changes)
    return LiveCaseScore(**fields)  # type: ignore[arg-type]


def test_t95_is_the_first_time_the_rolling_mean_stays_near_the_oracle() -> None:
    series = [50.0] * 20 + [100.0] * 60
    # The rolling mean is ≥ 95 from the window that starts at sample 20; the 90% allowance
    # lets the three windows before it (80, 90, and one mostly at 50) count as the tail.
    assert rolling_t95_s(series, 100.0) == pytest.approx(17 * 2.0)
    assert rolling_t95_s([50.0] * 40 + [100.0] * 60, 100.0) == pytest.approx(37 * 2.0)


def test_t95_ignores_a_single_noisy_low_sample() -> None:
    series = [100.0] * 40
    series[10] = 80.0  # one bad 2-s sample: the rolling mean only dips to 96
    assert rolling_t95_s(series, 100.0) == 0.0


def test_t95_is_none_when_the_run_never_settles_near_the_oracle() -> None:
    assert rolling_t95_s([80.0, 100.0] * 40, 100.0) is None
    assert rolling_t95_s([90.0] * 80, 100.0) is None


def test_t95_smooths_sample_noise_around_the_oracle() -> None:
    assert rolling_t95_s([80.0, 120.0] * 40, 100.0) == 0.0


def test_rolling_means_over_five_samples() -> None:
    assert rolling([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]) == [3.0, 4.0]


def test_relative_se_shrinks_with_samples_and_is_infinite_without_spread_data() -> None:
    few = relative_se(Point(value=2, samples=(90.0, 110.0) * 2))
    many = relative_se(Point(value=2, samples=(90.0, 110.0) * 20))
    assert many < few
    # stdev / mean / √n, inflated 1.5× for autocorrelated samples.
    assert few == pytest.approx(1.5 * statistics.stdev([90.0, 110.0] * 2) / 100.0 / 2)
    assert relative_se(Point(value=2, samples=(100.0,))) == float("inf")


def test_verdicts() -> None:
    assert case().verdict == "met"
    assert case(t95_s=None).verdict == "MISSED"
    assert case(t95_s=400.0).verdict == "MISSED"
    # The sweep does not tell the best from the default apart: nothing to reach.
    assert case(differs=False, t95_s=None).verdict == "flat"
    assert case(dip=0.80).verdict == "DROP"
    # The server's own drift since the start does not count against the agent.
    assert case(worst_drop=0.80).verdict == "met"


def test_dip_scores_each_size_the_agent_stayed_at_by_the_sweep() -> None:
    oracle = {1: 60.0, 2: 100.0, 4: 110.0, 8: 105.0}
    assert sweep_at(oracle, 3) == pytest.approx(100.0 + 10.0 * math.log(1.5) / math.log(2))
    assert sweep_at(oracle, 64) == 105.0
    # Two samples at 1 after its mixed first one: 60 / 100.
    assert dip([2] * 10 + [1] * 3 + [2] * 5 + [4] * 20, oracle, 2) == pytest.approx(0.6)
    # One sample after the mixed one (2 s) is a glance, not a stay.
    assert dip([2] * 10 + [1] * 2 + [2] * 5 + [4] * 20, oracle, 2) == 1.0


def test_a_recorded_case_scores_the_same_again() -> None:
    recorded = {
        "sweep": {"1": [50.0, 54.0], "2": [98.0, 102.0], "4": [118.0, 122.0]},
        "default_size": 2,
        "default_tps": 100.0,
        "agent": [100.0] * 5 + [120.0] * 40,
        "agent_sizes": [2] * 5 + [4] * 40,
        "final_size": 4,
        "ab_ratio": 1.0,
        "knob_changes": 1,
    }
    result = score_case("read_only", 16, recorded)
    assert (result.oracle_size, result.oracle_tps, result.default_tps) == (4, 120.0, 100.0)
    assert result.final_tps == 120.0 and result.dip == 1.0
    assert result.verdict == "met" and result.t95_s is not None and result.t95_s <= 10


def test_a_control_run_scores_the_servers_own_drift_beside_the_agents_safety() -> None:
    """The control holds the default with no agent: its safety is scored by the same
    formula as the agent's and shown beside it, so a fall the server makes alone is told
    from one the agent caused; the check itself still reads the agent's figure."""
    from benchmarks.live.case import SETTLE_S, CasePlan
    from benchmarks.live.scoring import done_when, safety

    agent = [100.0] * 10 + [70.0] * 5 + [100.0] * 30
    recorded = {
        "sweep": {"2": [98.0, 102.0] * 4, "4": [98.0, 102.0] * 4},
        "default_size": 2,
        "agent": agent,
        "agent_sizes": [2] * 45,
        "final_size": 2,
        "ab_ratio": 1.0,
        "knob_changes": 0,
        "control": [100.0] * 20 + [75.0] * 10 + [100.0] * 15,
    }
    result = score_case("select_only", 32, recorded)
    assert result.worst_drop == pytest.approx(0.7) == safety(agent)
    assert result.control_drop == pytest.approx(0.75)
    (check,) = [c for c in done_when([result]) if "safety" in c[1]]
    assert check == (False, "select_only x32: safety 0.70 ≥ 0.8 (no agent: 0.75)")
    without = score_case("select_only", 32, {k: v for k, v in recorded.items() if k != "control"})
    assert without.control_drop is None
    assert safety([100.0] * 3) == 1.0  # shorter than one 10-s window: nothing to tell

    plan = CasePlan(
        sizes=[1, 2],
        sweep_seconds=1.0,
        passes=1,
        agent_seconds=10.0,
        ab_seconds=1.0,
        work_dir=Path("."),
    )
    # The control holds the default as long as an agent runs, after a settling pause.
    with_control = dataclasses.replace(plan, control=True).load_seconds()
    assert with_control == pytest.approx(plan.load_seconds() + 10.0 + SETTLE_S)


def test_the_warm_comparison_scores_both_runs_by_the_same_sweep(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Cold from the default (2) and warm from the service's start (8) on one sweep: the
    start is scored by the sweep's mean there, so the warm start reads 1.00 of the oracle
    and reaches 95% at once, while the cold one climbs."""
    from benchmarks.live.report import print_warm_comparison

    sweep = {"1": [500.0] * 6, "2": [600.0] * 6, "4": [900.0] * 6, "8": [1000.0] * 6}
    cold = {
        "sweep": sweep,
        "default_size": 2,
        "start_size": 2,
        "start_source": "local_heuristic",
        "agent": [600.0] * 20 + [1000.0] * 60,
        "agent_sizes": [2] * 20 + [8] * 60,
        "final_size": 8,
        "ab_ratio": 1.0,
        "knob_changes": 3,
    }
    warm = cold | {
        "start_size": 8,
        "start_source": "model",
        "agent": [1000.0] * 80,
        "agent_sizes": [8] * 80,
        "knob_changes": 1,
    }
    print_warm_comparison("io_boundx64", [cold], [warm])
    lines = capsys.readouterr().out.splitlines()
    cold_row = next(line.split() for line in lines if line.startswith("cold"))
    warm_row = next(line.split() for line in lines if line.startswith("warm"))
    assert cold_row[1:4] == ["2", "local_heuristic", "0.60"]
    assert warm_row[1:5] == ["8", "model", "1.00", "0"]
    assert float(cold_row[4]) > 0


def _recorded_sweep(default: list[float], best: list[float]) -> dict[str, object]:
    return {
        "sweep": {"2": default, "8": best},
        "default_size": 2,
        "default_tps": statistics.fmean(default or [100.0]),
        "agent": [statistics.fmean(best)] * 40,
        "agent_sizes": [8] * 40,
        "final_size": 8,
        "ab_ratio": 1.0,
    }


def test_the_default_differs_only_beyond_the_sweeps_inflated_noise() -> None:
    """The sweep's noise test with standard errors inflated 1.5× for autocorrelation: 3
    standard errors of the difference. Means 100 and 110 with a spread of ±10 over 8
    samples (sem ≈ 3.8 each, 3 × 5.3 ≈ 16) are a tie; the same means with ±2 are not."""
    wide = score_case("read_only", 16, _recorded_sweep([90.0, 110.0] * 4, [100.0, 120.0] * 4))
    assert (wide.oracle_size, wide.differs, wide.verdict) == (8, False, "flat")
    narrow = score_case("read_only", 16, _recorded_sweep([98.0, 102.0] * 4, [108.0, 112.0] * 4))
    assert (narrow.oracle_size, narrow.differs, narrow.verdict) == (8, True, "met")
    # Between 2 and 3 standard errors: beyond agents.sweep's plain test, within this one.
    # Means 100 and 105, sem ≈ 1.5 each: 2 × 2.1 < 5 < 3 × 2.1.
    middle = score_case("read_only", 16, _recorded_sweep([96.0, 104.0] * 4, [101.0, 109.0] * 4))
    assert not middle.differs


def test_a_default_outside_the_sweep_is_judged_on_its_own_samples() -> None:
    recorded = _recorded_sweep([], [108.0, 112.0] * 4) | {
        "sweep": {"8": [108.0, 112.0] * 4},
        "default_samples": [70.0, 130.0] * 4,
        "default_tps": 100.0,
    }
    assert not score_case("read_only", 16, recorded).differs
    recorded["default_samples"] = [99.0, 101.0] * 4
    assert score_case("read_only", 16, recorded).differs


def test_first_sustained_needs_a_whole_window_unless_partial_windows_count() -> None:
    values = [0.0] * 5 + [1.0] * 10
    # From index 5 every value holds; a 10-wide window from there ends exactly at the end.
    assert first_sustained(values, 1.0, window=10, hold=1.0) == 5
    assert first_sustained(values, 1.0, window=20, hold=1.0) is None
    assert first_sustained(values, 1.0, window=20, hold=1.0, partial_window=True) == 5
    # 9 of 10 at or above the threshold is enough with hold 0.9; 8 of 10 is not.
    assert first_sustained([0.0] + [1.0] * 9, 1.0, window=10, hold=0.9) == 0
    assert first_sustained([0.0, 0.0] + [1.0] * 8, 1.0, window=10, hold=0.9) is None


def test_repeated_warm_and_cold_runs_alternate_and_are_summarised_per_arm(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Three runs per arm: pairs alternate cold-warm, warm-cold, cold-warm (drift over the
    case favours neither arm), each run is recorded under its own key, and each arm gets
    its median and range; a T95 never reached ranks above every reached one."""
    from benchmarks.live.case import CasePlan, case_key, recorded_runs
    from benchmarks.live.report import print_warm_comparison
    from benchmarks.live.warm import WarmService

    service = WarmService(url="http://x", enrollment_token="t", description="d")
    plan = CasePlan(
        sizes=[1, 2],
        sweep_seconds=1.0,
        passes=1,
        agent_seconds=10.0,
        ab_seconds=1.0,
        work_dir=Path("."),
        warm=service,
        repeats=3,
    )
    assert [label for label, _ in plan.runs()] == ["cold", "warm", "warm", "cold", "cold", "warm"]
    swapped = dataclasses.replace(plan, warm_first=True).runs()
    assert [label for label, _ in swapped[:2]] == ["warm", "cold"]
    assert dataclasses.replace(plan, warm=None).runs() == [("cold", 0)]

    sweep = {"1": [500.0] * 6, "2": [600.0] * 6, "4": [900.0] * 6, "8": [1000.0] * 6}
    base = {"sweep": sweep, "default_size": 2, "ab_ratio": 1.0, "knob_changes": 1}

    def run(start: int, final: int, source: str) -> dict[str, object]:
        return base | {
            "start_size": start,
            "start_source": source,
            "agent": [600.0] * 80,
            "agent_sizes": [start] * 20 + [final] * 60,
            "final_size": final,
        }

    raw = {
        case_key("io_bound", 64, repeat=r, warm=w): run(s, f, "model" if w else "tuple_in_force")
        for (r, w, s, f) in [
            (0, False, 2, 8),
            (1, False, 2, 4),
            (2, False, 2, 2),
            (0, True, 8, 8),
            (1, True, 4, 8),
            (2, True, 8, 4),
        ]
    }
    assert "io_boundx64-warm-3" in raw
    cold, warm = (recorded_runs(raw, "io_boundx64", warm=w) for w in (False, True))
    assert [r["final_size"] for r in cold] == [8, 4, 2]
    print_warm_comparison("io_boundx64", cold, warm)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[1:7]] == [
        *(f"cold-{i}" for i in (1, 2, 3)),
        *(f"warm-{i}" for i in (1, 2, 3)),
    ]
    cold_summary = next(line for line in lines if line.startswith("cold ") and "[" in line)
    warm_summary = next(line for line in lines if line.startswith("warm ") and "[" in line)
    # Cold: finals at 8, 4, 2 → 1.00, 0.90, 0.60; started at 2 (0.60) each time and only
    # the first run ever reached 95% of the oracle.
    assert "never [" in cold_summary and "0.90 [0.60, 1.00]" in cold_summary
    assert "0.60 [0.60, 0.60]" in cold_summary
    assert "1.00 [0.90, 1.00]" in warm_summary


def test_a_climb_still_searching_when_the_run_stopped_is_said_so() -> None:
    """The final size of a run whose climb had not ended is the one in force mid-search:
    the check still scores it, and says so. A restart after a ``converged`` event means the
    last climb had not ended; a record without events says nothing."""
    from benchmarks.live.agent_runs import climb_ended
    from benchmarks.live.scoring import done_when

    held = "78 converged 8: holding {'default_pool_size': 8}"
    restart = "90 workload-change 25: throughput at {'default_pool_size': 25} fell"
    assert climb_ended([held])
    assert not climb_ended([])
    assert not climb_ended([held, restart])
    assert climb_ended([held, restart, held])
    # The agent profiled a changed workload and started a new climber: not ended yet.
    assert not climb_ended([held, "climb 2"])
    assert climb_ended([held, "climb 2", held])
    assert not climb_ended(["17 rollback 8: sharp drop at a probe"])

    recorded = {
        "sweep": {"8": [98.0, 102.0] * 4, "16": [98.0, 102.0] * 4},
        "default_size": 16,
        "agent": [100.0] * 40,
        "agent_sizes": [16] * 40,
        "final_size": 16,
        "ab_ratio": 1.0,
        "knob_changes": 0,
        "climber_events": [],
    }
    searching = score_case("select_only", 32, recorded)
    assert searching.settled is False
    (economy,) = [c for c in done_when([searching]) if "flat" in c[1]]
    assert economy == (
        True,
        "select_only x32 (flat): final size 16 ≤ 2 × smallest tied 8 (2.0×)"
        " (the climb had not ended)",
    )
    ended = score_case("select_only", 32, {**recorded, "climber_events": [held]})
    assert ended.settled is True
    assert "had not ended" not in " ".join(text for _, text in done_when([ended]))
    older = score_case(
        "select_only", 32, {k: v for k, v in recorded.items() if k != "climber_events"}
    )
    assert older.settled is None
