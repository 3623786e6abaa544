"""A smoke run of ``benchmarks.climb``: it prints every table and the checks."""

from __future__ import annotations

import pytest

from benchmarks import climb


def test_quick_benchmark_prints_every_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert climb.main(["--quick", "--seeds", "1", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    for heading in (
        "Cold start",
        "Noise sweep",
        "Workload switch",
        "Warm start",
        "Real MariaDB curves replayed",
        "Real PgBouncer curves replayed",
        "Done-when checks",
        "PgBouncer replays that differ",
    ):
        assert heading in out
    for name in climb.CLIMBER_NAMES:
        assert name in out


def test_t95_definition() -> None:
    import numpy as np

    series = np.array([0.5] * 10 + [0.99] * 40)
    assert climb.t95(series) == 7  # 27 of the 30 samples from index 7 are good
    dips = np.array([0.5] * 10 + ([0.99] * 9 + [0.5]) * 4)  # 90% of every window is good
    assert climb.t95(dips) == 9  # window 9…38 holds 3 dips: 27 of 30 good
    assert climb.t95(np.full(50, 0.9)) == float("inf")
