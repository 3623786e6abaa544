"""What a sweep's own visits resolve (trainer.repeatability)."""

from __future__ import annotations

import numpy as np
import pytest

from trainer.repeatability import (
    fold_means,
    repeatability,
    time_dominated,
    time_dominated_cases,
    visit_regrets,
)
from trainer.sources import datasets


def test_a_best_size_every_visit_agrees_on_costs_nothing_and_the_default_its_gap() -> None:
    # Sizes 1, 2, 4, 8 (default 2); 4 is best in every visit by 25%.
    visits = np.array(
        [[60.0, 62.0, 58.0], [80.0, 78.0, 82.0], [100.0, 104.0, 98.0], [90.0, 88.0, 91.0]]
    )
    chosen, default = visit_regrets(visits, default_index=1)
    assert chosen.tolist() == [0.0, 0.0, 0.0]
    assert np.allclose(default, [0.2, 0.25, 1 - 82 / 98])


def test_on_pure_noise_the_other_visits_choose_no_better_than_the_default() -> None:
    rng = np.random.default_rng(3)
    chosen, default = [], []
    for _ in range(400):
        a, b = visit_regrets(rng.normal(100.0, 10.0, size=(6, 3)), default_index=1)
        chosen.extend(a)
        default.extend(b)
    assert abs(np.mean(chosen) - np.mean(default)) < 0.02
    assert np.mean(chosen) > 0.05


def test_many_short_visits_are_scored_in_folds_not_one_noisy_visit_at_a_time() -> None:
    # A paired sweep's 20 one-sample visits of sizes 1, 2, 4 (default 2): 4 is 5% better,
    # each 1-s sample 8% noisy. Held out one at a time, a visit is too noisy to tell.
    rng = np.random.default_rng(11)
    three = np.array([[90.0, 91.0, 89.0], [100.0, 99.0, 101.0], [105.0, 104.0, 106.0]])
    assert np.array_equal(fold_means(three), three)  # v1-v3's three visits stay as they are
    chosen_one, chosen_folds, default_folds = [], [], []
    for _ in range(200):
        visits = np.array([[0.9], [1.0], [1.05]]) * 100 * np.exp(rng.normal(0, 0.08, (3, 20)))
        folds = fold_means(visits)
        assert folds.shape == (3, 3)
        assert np.allclose(folds[:, 1], visits[:, 1::3].mean(axis=1))
        chosen_one.extend(visit_regrets(visits, default_index=1)[0])
        chosen, default = visit_regrets(folds, default_index=1)
        chosen_folds.extend(chosen)
        default_folds.extend(default)
    # Scored on folds the chosen size regrets less than the default; one visit at a time
    # the noise of the held-out sample alone makes every choice look costly.
    assert np.mean(chosen_folds) < 0.6 * np.mean(default_folds)
    assert np.mean(chosen_one) > 2 * np.mean(chosen_folds)


def test_the_bundled_sweeps_pgbouncer_resolves_its_best_and_mariadb_v1_does_not() -> None:
    pgbouncer = repeatability(datasets.load_dataset("pgbouncer-2core-v1"))
    mariadb = repeatability(datasets.load_dataset("mariadb-2core-v1"))
    assert pgbouncer is not None and mariadb is not None
    assert pgbouncer.cases == 33 and pgbouncer.visits >= 2 * pgbouncer.cases
    assert pgbouncer.ratio < 0.25
    assert pgbouncer.chosen_within > pgbouncer.default_within
    assert mariadb.cases == 19 and mariadb.ratio > 0.8
    # Drawn by whole workloads: PgBouncer's sweeps show their best beats the default beyond
    # doubt; v1's cannot tell the two apart.
    assert pgbouncer.paired is not None and mariadb.paired is not None
    assert pgbouncer.paired.verdict == "better" and pgbouncer.paired.ratio_high < 0.5
    assert pgbouncer.paired.ratio == pytest.approx(pgbouncer.ratio)
    assert mariadb.paired.verdict == "tied"


def test_a_shaped_curve_is_not_time_dominated_a_server_switching_levels_is() -> None:
    # A curve spanning 25% whose visits agree within 3%: its shape is the pool size's.
    shaped = np.array([[80.0, 82.0, 79.0], [100.0, 98.0, 101.0], [90.0, 92.0, 89.0]])
    assert not time_dominated(shaped)
    # A server at 5k or 10k whatever the size (as the v3 sweep of wait_1ms-c16 ran): one
    # size's visits differ by 2x, more than the means of the sizes do.
    switching = np.array(
        [[5000.0, 5100.0, 10200.0], [10100.0, 5050.0, 5000.0], [5100.0, 9900.0, 5050.0]]
    )
    assert time_dominated(switching)


def test_most_mariadb_sweeps_are_time_dominated_and_few_pgbouncer_ones() -> None:
    mariadb, mariadb_total = time_dominated_cases(datasets.load_dataset("mariadb-2core-v2"))
    pgbouncer, pgbouncer_total = time_dominated_cases(datasets.load_dataset("pgbouncer-2core-v1"))
    assert mariadb_total == 71 and pgbouncer_total == 33
    assert len(mariadb) > mariadb_total / 2
    assert len(pgbouncer) <= 3
