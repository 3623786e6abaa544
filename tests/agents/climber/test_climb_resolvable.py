"""What the real replays resolve (``benchmarks.climb.resolvable``): a global sweep of the
measured sizes, scored on issue 15's real-curve bars, with its own cost beside it."""

from __future__ import annotations

import pytest

from benchmarks.climb.replay import real_cases
from benchmarks.climb.resolvable import VISIT_SAMPLES, main, sweep_case

#: A shaped case: best at 64 groups, one group at a fifth of it.
SHAPED = "mariadb-2core-v4:io_bound_read_write-c16"
#: A flat case: sizes 2-64 within the sweep's noise.
FLAT = "mariadb-2core-v4:range_scans-c16"


def test_a_sweep_of_a_shaped_case_picks_a_size_near_its_best_and_pays_for_the_far_ones() -> None:
    case = real_cases()[SHAPED]
    assert case.differs and case.truth(1) < 0.3 * case.peak()
    results = [sweep_case(SHAPED, seed, 120) for seed in range(6)]
    assert sum(r.quality >= 0.95 for r in results) >= 5
    for result in results:
        assert result.best_pick in case.sizes and result.tied_pick <= result.best_pick
        # Every measured size is visited in the first round, one group too: the sweep's
        # worst truth is one group's, over the engine default's.
        assert result.worst == pytest.approx(case.truth(1) / case.truth(2))
        # Each visit keeps all its samples but the lag one: at most the budget kept.
        assert result.samples * VISIT_SAMPLES <= 120 * (VISIT_SAMPLES + 1)


def test_on_a_flat_case_the_tied_pick_stays_near_the_smallest_tied_size() -> None:
    """Range scans at 16 clients: every size from 2 up within the noise. The best median
    wanders with the noise; the smallest size tied with it stays within 4x the tied size."""
    case = real_cases()[FLAT]
    assert not case.differs
    results = [sweep_case(FLAT, seed, 60) for seed in range(8)]
    assert all(r.tied_pick <= 4 * case.tied_size for r in results)
    assert any(r.best_pick > r.tied_pick for r in results)


def test_the_command_prints_both_real_families_and_refuses_a_bad_budget(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--seeds", "1", "--budgets", "60", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    rows = [line.split()[0] for line in out.splitlines() if line.startswith("real")]
    assert rows == ["real", "real-v4"]
    with pytest.raises(SystemExit):
        main(["--budgets", "sixty"])
    assert "--budgets" in capsys.readouterr().err
