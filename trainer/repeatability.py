"""What a measured sweep resolves about its own best size.

Each pool size of a real sweep is measured in interleaved visits (docs/datasets.md). Choose a
case's best size from every visit but one and score that choice on the visit left out, next
to the engine default scored on the same visit: the regret that remains is what the sweep's
own noise leaves to any predictor, however much it knows about the workload. It tells how far
below the default's regret a model can be shown to be on these cases (docs/trainer.md,
"Evaluation and promotion").
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from agents import knobs
from trainer.calibration.realcases import stored_floats
from trainer.paired import RegretComparison, regret_ratio
from trainer.realscore import NEAR_BEST
from trainer.sources.datasets import Dataset


@dataclass(frozen=True)
class Repeatability:
    """Mean regrets on held-out visits: the size the other visits choose, and the default."""

    dataset: str
    cases: int
    visits: int
    chosen: float
    default: float
    chosen_within: float
    default_within: float
    #: The chosen size against the default on the same held-out visits, with intervals over
    #: whole workloads (:mod:`trainer.paired`): how low a ratio these sweeps can show.
    paired: RegretComparison | None = None

    @property
    def ratio(self) -> float:
        """The chosen size's regret over the default's: the lowest ratio these sweeps show."""
        return self.chosen / self.default if self.default > 0 else float("nan")


def visit_regrets(
    visits: NDArray[np.float64], default_index: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per held-out visit (a column of ``visits``, sizes × visits): the regret of the size
    with the best mean over the other visits, and the regret of the default's row."""
    chosen, default = [], []
    for left_out in range(visits.shape[1]):
        others = np.delete(visits, left_out, axis=1).mean(axis=1)
        held = visits[:, left_out]
        best = float(held.max())
        if best <= 0:
            continue
        chosen.append(1.0 - held[int(np.argmax(others))] / best)
        default.append(1.0 - held[default_index] / best)
    return np.array(chosen, dtype=np.float64), np.array(default, dtype=np.float64)


#: Visits are pooled into at most this many interleaved folds before one is held out.
FOLDS = 3


def fold_means(visits: NDArray[np.float64], folds: int = FOLDS) -> NDArray[np.float64]:
    """``visits`` (sizes × visits) pooled into at most ``folds`` interleaved folds (visit j
    into fold j mod ``folds``), each column a fold's mean. A sweep of three visits is left as
    it is; a paired sweep of twenty 1-s visits is scored on thirds of its run, since one such
    visit alone is far noisier than the label the sweep gives (docs/datasets.md, "v4")."""
    count = visits.shape[1]
    if count <= folds:
        return visits
    return np.stack([visits[:, f::folds].mean(axis=1) for f in range(folds)], axis=1)


def _visit_matrices(
    dataset: Dataset,
) -> Iterator[tuple[str, str, NDArray[np.float64], int | None]]:
    """Per case with at least two visits per pool size: its id, its workload group, its
    visit means (sizes × visits, sizes ascending; :func:`fold_means` of them) and the row of
    the engine default (None if not in the grid)."""
    workloads = dataset.workloads.set_index(dataset.workloads["workload_id"].astype(str))
    for workload_id, rows in dataset.curves.groupby("workload_id", sort=False):
        row = workloads.loc[str(workload_id)]
        engine = knobs.Engine(str(row["engine"]))
        size_knob = knobs.POOL_SIZE_KNOB[engine]
        sizes = rows[rows["knob"].astype(str) == size_knob].sort_values("value")
        if "visit_means" not in sizes.columns or sizes.empty:
            continue
        per_size = [stored_floats(v) for v in sizes["visit_means"]]
        count = min(len(v) for v in per_size)
        if count < 2:
            continue
        default_size = knobs.knob(engine, size_knob).default_for(int(row["cpu_count"]))
        where = np.flatnonzero(sizes["value"].to_numpy() == default_size)
        matrix = fold_means(np.array([v[:count] for v in per_size], dtype=np.float64))
        group = str(row["group"]) if "group" in row.index else str(workload_id)
        yield str(workload_id), group, matrix, int(where[0]) if where.size else None


def repeatability(dataset: Dataset) -> Repeatability | None:
    """The held-out-visit regrets over every case of ``dataset`` whose grid holds the engine
    default and which has at least two visits per size; None when no case does."""
    chosen: list[NDArray[np.float64]] = []
    default: list[NDArray[np.float64]] = []
    groups: list[str] = []
    for _workload_id, group, matrix, default_index in _visit_matrices(dataset):
        if default_index is None:
            continue
        a, b = visit_regrets(matrix, default_index)
        chosen.append(a)
        default.append(b)
        groups.extend([group] * a.size)
    if not chosen:
        return None
    every_chosen, every_default = np.concatenate(chosen), np.concatenate(default)
    paired = (
        regret_ratio(every_chosen, every_default, groups, names=("other visits", "default"))
        if every_chosen.size
        else None
    )
    return Repeatability(
        dataset=dataset.name,
        cases=len(chosen),
        visits=int(every_chosen.size),
        chosen=float(every_chosen.mean()),
        default=float(every_default.mean()),
        chosen_within=float(np.mean(every_chosen <= NEAR_BEST)),
        default_within=float(np.mean(every_default <= NEAR_BEST)),
        paired=paired,
    )


def time_dominated(visits: NDArray[np.float64]) -> bool:
    """Whether one pool size measured at different times (its visits, a row of ``visits``,
    sizes × visits) differed by more than the whole curve spans from its worst size's mean
    to its best's: what the server did at the moment moved throughput more than the pool
    size did (a server switching between two levels, a phased load, or a curve flatter than
    its noise), so the sweep cannot tell the curve's shape from when each size was measured.
    A visit that measured nothing at all is such a moment too."""
    if not (visits > 0).all():
        return True
    means = visits.mean(axis=1)
    curve = float(means.max() / means.min())
    over_time = float((visits.max(axis=1) / visits.min(axis=1)).max())
    return over_time > curve


def time_dominated_cases(dataset: Dataset) -> tuple[list[str], int]:
    """The cases of ``dataset`` whose sweep is :func:`time_dominated`, and how many cases
    have at least two visits per size."""
    found, total = [], 0
    for workload_id, _group, matrix, _default in _visit_matrices(dataset):
        total += 1
        if time_dominated(matrix):
            found.append(workload_id)
    return found, total
