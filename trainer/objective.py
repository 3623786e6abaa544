"""What the pool size's point booster minimises: throughput regret, or a plain loss.

:class:`RegretObjective` is a custom LightGBM objective over each training curve's regret,
tabulated once (:class:`RegretTable`); :class:`PointObjective` names the choice the search
makes between it and the plain losses. Why and how: docs/trainer.md ("Point objectives").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import lightgbm as lgb
import numpy as np
from numpy.typing import NDArray

from trainer.examples import Example

#: log2 pool sizes on which each training curve's regret is tabulated (sizes 1 to 128).
LOG2_GRID = np.linspace(0.0, 7.0, 141)
_GRID_STEP = float(LOG2_GRID[1] - LOG2_GRID[0])

#: The point objectives the search chooses from: the regret itself, the mean (L2) or the
#: 70% quantile of the economical optimum.
POINT_OBJECTIVES = ("regret", "l2", "q70")


@dataclass(frozen=True, slots=True)
class PointObjective:
    """The point booster's objective: ``kind`` is ``regret``, ``l2`` or ``qNN`` (a quantile);
    ``pull`` and ``damping`` shape :class:`RegretObjective` and matter only for ``regret``;
    ``centred`` starts the booster from the median residual over the size offset (else from
    the offset itself: the theory, trusted until the trees correct it)."""

    kind: str = "l2"
    pull: float = 0.005
    damping: float = 0.3
    centred: bool = True

    def __post_init__(self) -> None:
        self.booster_params()  # refuses an unknown kind here, not deep in a fit

    def booster_params(self) -> dict[str, Any]:
        """LightGBM parameters for ``kind`` (``regret`` replaces the objective with a
        :class:`RegretObjective` built from the data)."""
        if self.kind in ("l2", "regret"):
            return {"objective": "regression"}
        if self.kind.startswith("q") and self.kind[1:].isdigit():
            return {"objective": "quantile", "alpha": int(self.kind[1:]) / 100}
        raise ValueError(f"unknown point objective {self.kind!r}; choose from {POINT_OBJECTIVES}")


class RegretTable:
    """Each example's regret at every size of :data:`LOG2_GRID` (sizes above the connection
    count read as the connection count, as predictions are clipped there)."""

    def __init__(self, examples: Sequence[Example]) -> None:
        self.values = np.zeros((len(examples), LOG2_GRID.size))
        self.has_curve = np.zeros(len(examples), dtype=bool)
        sizes = np.exp2(LOG2_GRID)
        for i, example in enumerate(examples):
            if example.curve is None or example.curve.peak <= 0:
                continue
            cap = example.profile.connections if example.profile.connections > 0 else sizes[-1]
            reached = example.curve.at(np.minimum(sizes, max(cap, 1)))
            self.values[i] = 1.0 - reached / example.curve.peak
            self.has_curve[i] = True

    def _locate(
        self, log2_sizes: NDArray[np.float64]
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        z = np.clip(log2_sizes, LOG2_GRID[0], LOG2_GRID[-1])
        index = np.clip(((z - LOG2_GRID[0]) / _GRID_STEP).astype(np.int64), 0, LOG2_GRID.size - 2)
        return index, (z - LOG2_GRID[index]) / _GRID_STEP

    def regret(self, log2_sizes: NDArray[np.float64]) -> NDArray[np.float64]:
        index, frac = self._locate(log2_sizes)
        rows = np.arange(index.size)
        low, high = self.values[rows, index], self.values[rows, index + 1]
        return np.asarray(low + frac * (high - low), dtype=np.float64)

    def slope(self, log2_sizes: NDArray[np.float64]) -> NDArray[np.float64]:
        index, _ = self._locate(log2_sizes)
        rows = np.arange(index.size)
        return np.asarray(
            (self.values[rows, index + 1] - self.values[rows, index]) / _GRID_STEP,
            dtype=np.float64,
        )


class RegretObjective:
    """LightGBM objective: regret at the predicted size plus a small pull towards the
    economical optimum (fewer threads win a plateau's tie); plain L2 where no curve.
    Scores are residuals over ``size_offset``; the Hessian is a constant (regret is not
    convex). LightGBM leaves sample weights to a custom objective: ``weights`` scale both."""

    def __init__(
        self,
        table: RegretTable,
        *,
        offset: NDArray[np.float64],
        economical: NDArray[np.float64],
        pull: float,
        damping: float,
        weights: NDArray[np.float64] | None = None,
    ) -> None:
        self.table = table
        self.offset = offset
        self.economical = economical
        self.weight = np.where(table.has_curve, pull, 1.0)
        self.sample_weight = np.ones(economical.size) if weights is None else weights
        self.hessian = (
            np.where(table.has_curve, damping, 0.0) + 2.0 * self.weight
        ) * self.sample_weight

    def __call__(
        self, preds: NDArray[np.float64], _data: lgb.Dataset
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        slope = np.where(self.table.has_curve, self.table.slope(self.offset + preds), 0.0)
        gradient = slope + 2.0 * self.weight * (preds - self.economical)
        return gradient * self.sample_weight, self.hessian


def regret_eval(
    table: RegretTable,
    offset: NDArray[np.float64],
    economical: NDArray[np.float64],
    weights: NDArray[np.float64] | None = None,
) -> Callable[[NDArray[np.float64], lgb.Dataset], tuple[str, float, bool]]:
    """A LightGBM feval: the (weighted) mean regret of the scores (L2 to the optimum where
    no curve)."""

    def evaluate(preds: NDArray[np.float64], _data: lgb.Dataset) -> tuple[str, float, bool]:
        regret = table.regret(offset + preds)
        l2 = (preds - economical) ** 2
        value = np.average(np.where(table.has_curve, regret, l2), weights=weights)
        return "regret", float(value), False

    return evaluate
