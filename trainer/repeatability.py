"""What a measured sweep resolves about its own best size.

Each pool size of a real sweep is measured in interleaved visits (docs/datasets.md). Choose a
case's best size from every visit but one and score that choice on the visit left out, next
to the engine default scored on the same visit: the regret that remains is what the sweep's
own noise leaves to any predictor, however much it knows about the workload. It tells how far
below the default's regret a model can be shown to be on these cases (docs/trainer.md,
"Evaluation and promotion").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from agents import knobs
from trainer.calibration.realcases import stored_floats
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


def repeatability(dataset: Dataset) -> Repeatability | None:
    """The held-out-visit regrets over every case of ``dataset`` whose grid holds the engine
    default and which has at least two visits per size; None when no case does."""
    workloads = dataset.workloads.set_index(dataset.workloads["workload_id"].astype(str))
    chosen: list[NDArray[np.float64]] = []
    default: list[NDArray[np.float64]] = []
    for workload_id, rows in dataset.curves.groupby("workload_id", sort=False):
        row = workloads.loc[str(workload_id)]
        engine = knobs.Engine(str(row["engine"]))
        size_knob = knobs.POOL_SIZE_KNOB[engine]
        sizes = rows[rows["knob"].astype(str) == size_knob].sort_values("value")
        if "visit_means" not in sizes.columns or sizes.empty:
            continue
        default_size = knobs.knob(engine, size_knob).default_for(int(row["cpu_count"]))
        where = np.flatnonzero(sizes["value"].to_numpy() == default_size)
        per_size = [stored_floats(v) for v in sizes["visit_means"]]
        count = min(len(v) for v in per_size)
        if not where.size or count < 2:
            continue
        matrix = np.array([v[:count] for v in per_size], dtype=np.float64)
        a, b = visit_regrets(matrix, int(where[0]))
        chosen.append(a)
        default.append(b)
    if not chosen:
        return None
    every_chosen, every_default = np.concatenate(chosen), np.concatenate(default)
    return Repeatability(
        dataset=dataset.name,
        cases=len(chosen),
        visits=int(every_chosen.size),
        chosen=float(every_chosen.mean()),
        default=float(every_default.mean()),
        chosen_within=float(np.mean(every_chosen <= NEAR_BEST)),
        default_within=float(np.mean(every_default <= NEAR_BEST)),
    )
