"""The paired comparison of two predictors' real regrets: intervals over whole workloads."""

from __future__ import annotations

import json

import numpy as np
import pytest

from trainer.paired import regret_ratio


def test_a_predictor_better_on_every_workload_is_told_better() -> None:
    rng = np.random.default_rng(1)
    b = rng.uniform(0.05, 0.3, size=40)
    a = b * 0.4
    groups = [f"w{i // 2}" for i in range(40)]
    result = regret_ratio(a, b, groups, names=("model", "default"))
    assert result.verdict == "better"
    assert result.ratio == pytest.approx(0.4)
    assert result.ratio_high < 0.5
    assert result.difference_high < 0
    assert result.groups == 20 and result.cases == 40


def test_the_same_regrets_are_tied_with_a_ratio_of_one() -> None:
    b = np.linspace(0.0, 0.2, 12)
    result = regret_ratio(b, b.copy(), [f"w{i}" for i in range(12)])
    assert result.verdict == "tied"
    assert result.ratio == pytest.approx(1.0)
    assert result.difference_low == result.difference_high == 0.0


def test_one_workload_carrying_the_whole_difference_is_not_called_better() -> None:
    """The mean says 0.03 better; drawn by workload, a third of the draws miss the one
    workload that makes it, so the data do not tell the two apart."""
    b = np.full(20, 0.05)
    a = b.copy()
    a[7] = 0.0
    b[7] = 0.65
    result = regret_ratio(a, b, [f"w{i}" for i in range(20)])
    assert result.difference == pytest.approx(-0.0325)
    assert result.verdict == "tied"


def test_cases_of_one_workload_are_drawn_together() -> None:
    """Client counts of one workload move together: drawn as a whole the interval is wider
    than if every case were independent, which would overstate what the cases show."""
    rng = np.random.default_rng(3)
    effect = np.repeat(rng.normal(0.0, 0.1, size=10), 4)
    b = np.full(40, 0.2)
    a = np.clip(b + effect + rng.normal(0.0, 0.01, size=40), 0.0, None)
    workloads = [f"w{i // 4}" for i in range(40)]
    cases = [f"c{i}" for i in range(40)]
    whole = regret_ratio(a, b, workloads)
    apart = regret_ratio(a, b, cases)
    assert whole.difference == apart.difference
    width = whole.difference_high - whole.difference_low
    assert width > 1.5 * (apart.difference_high - apart.difference_low)


def test_the_registry_gets_finite_numbers_when_the_baseline_never_regrets() -> None:
    result = regret_ratio(np.array([0.1, 0.0]), np.zeros(2), ["w0", "w1"], names=("m", "d"))
    record = result.as_dict()
    assert record["ratio"] is None and record["ratio_interval"] == [None, None]
    assert record["verdict"] == "tied"
    json.dumps(record, allow_nan=False)


@pytest.mark.parametrize(
    ("a", "b", "groups"),
    [
        (np.zeros(3), np.zeros(2), ["w0", "w1", "w2"]),
        (np.zeros(2), np.zeros(2), ["w0"]),
        (np.zeros(0), np.zeros(0), []),
    ],
)
def test_mismatched_inputs_are_refused(a: np.ndarray, b: np.ndarray, groups: list[str]) -> None:
    with pytest.raises(ValueError, match="one regret of each predictor"):
        regret_ratio(a, b, groups)
