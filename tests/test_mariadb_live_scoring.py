"""How benchmarks.mariadb_live scores a case (the live run itself is the benchmark)."""

from __future__ import annotations

import pytest

from benchmarks.mariadb_live import CaseResult, relative_se, rolling, t95


def case(**changes: object) -> CaseResult:
    fields: dict[str, object] = {
        "workload": "read_only",
        "clients": 16,
        "oracle_size": 8,
        "oracle_tps": 1200.0,
        "default_size": 2,
        "default_tps": 1000.0,
        "noise": 0.04,
        "final_tps": 1180.0,
        "final_size": 8,
        "ab_ratio": 1.0,
        "t95_s": 60.0,
        "knob_changes": 6,
        "worst_drop": 0.97,
    }
    fields.update(changes)
    return CaseResult(**fields)  # type: ignore[arg-type]


def test_t95_is_the_first_time_the_rolling_mean_stays_near_the_oracle() -> None:
    series = [50.0] * 20 + [100.0] * 60
    # The rolling mean is ≥ 95 from the window that starts at sample 20; the 90% allowance
    # lets the three windows before it (80, 90, and one mostly at 50) count as the tail.
    assert t95(series, 100.0) == pytest.approx(17 * 2.0)
    assert t95([50.0] * 40 + [100.0] * 60, 100.0) == pytest.approx(37 * 2.0)


def test_t95_ignores_a_single_noisy_low_sample() -> None:
    series = [100.0] * 40
    series[10] = 80.0  # one bad 2-s sample: the rolling mean only dips to 96
    assert t95(series, 100.0) == 0.0


def test_t95_is_none_when_the_run_never_settles_near_the_oracle() -> None:
    assert t95([80.0, 100.0] * 40, 100.0) is None
    assert t95([90.0] * 80, 100.0) is None


def test_t95_smooths_sample_noise_around_the_oracle() -> None:
    assert t95([80.0, 120.0] * 40, 100.0) == 0.0


def test_rolling_means_over_five_samples() -> None:
    assert rolling([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]) == [3.0, 4.0]


def test_relative_se_shrinks_with_samples_and_is_infinite_without_spread_data() -> None:
    few = relative_se([90.0, 110.0] * 2)
    many = relative_se([90.0, 110.0] * 20)
    assert many < few
    assert relative_se([100.0]) == float("inf")


def test_verdicts() -> None:
    assert case().verdict == "met"
    assert case(t95_s=None).verdict == "MISSED"
    assert case(t95_s=400.0).verdict == "MISSED"
    # Best over default by 3% with ±4% noise on each mean: the sweep does not tell them apart.
    assert case(oracle_tps=1030.0, t95_s=None).verdict == "flat"
    assert case(worst_drop=0.80).verdict == "DROP"
