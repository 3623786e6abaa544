"""Does a simulated corpus cover the real cases?

For each real case: its nearest simulated workloads in the feature space the trainer's
nearest-workload mapping measures distance in (standardised log features of the profile,
:data:`trainer.baselines.NEAREST_FEATURES`), and how well each neighbour's pool-size curve
matches the measured one. Curves are compared in shape: the neighbour's curve is read at the
measured sizes (log-linear interpolation) and shifted by the median log ratio, because a
simulated request is a statement and a real curve may count transactions, and because the
optimum depends on the shape only. A case is covered when it has neighbours within
:data:`RADIUS` and the median shape error of its nearest :data:`NEIGHBOURS` is within the
curve's CV.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from sklearn.neighbors import NearestNeighbors

from service.recommendations.workload_features import FEATURES, feature_matrix
from trainer.baselines import NEAREST_FEATURES
from trainer.calibration.noise import curve_noise
from trainer.calibration.realcases import RealCase
from trainer.examples import Example
from trainer.regret import Curve

FloatArray = NDArray[np.float64]

NEIGHBOURS = 10
#: Largest standardised feature distance at which a simulated workload is a neighbour: one
#: standard deviation of the corpus's features in all directions together.
RADIUS = 1.0


def shape_error(curve: Curve, sizes: FloatArray, measured: FloatArray) -> float:
    """Median |log ratio| between ``curve`` read at ``sizes`` and ``measured``, after removing
    the median log ratio (the scale)."""
    ratio = np.log(np.maximum(curve.at(sizes), 1e-12)) - np.log(np.maximum(measured, 1e-12))
    return float(np.median(np.abs(ratio - np.median(ratio))))


@dataclass(frozen=True)
class Neighbour:
    workload_id: str
    group: str
    distance: float
    curve_error: float


@dataclass(frozen=True)
class CaseCoverage:
    """A real case's nearest simulated workloads and their curve errors (nearest first)."""

    workload_id: str
    cv: float
    neighbours: tuple[Neighbour, ...]

    @property
    def close(self) -> tuple[Neighbour, ...]:
        return tuple(n for n in self.neighbours if n.distance <= RADIUS)

    @property
    def nearest_error(self) -> float:
        return self.neighbours[0].curve_error if self.neighbours else float("inf")

    @property
    def nearest_distance(self) -> float:
        return self.neighbours[0].distance if self.neighbours else float("inf")

    @property
    def median_error(self) -> float:
        """Median curve error of the neighbours within the radius (inf: none)."""
        close = self.close
        return float(np.median([n.curve_error for n in close])) if close else float("inf")

    @property
    def matching(self) -> float:
        """Share of the neighbours within the radius whose curve matches within noise."""
        close = self.close
        if not close:
            return 0.0
        return float(np.mean([n.curve_error <= self.cv for n in close]))

    @property
    def covered(self) -> bool:
        return bool(self.close) and self.median_error <= self.cv


class CorpusIndex:
    """A simulated corpus's feature space (standardised on the corpus) and its curves."""

    def __init__(self, examples: Sequence[Example]) -> None:
        usable = [e for e in examples if e.curve is not None]
        if not usable:
            raise ValueError("a coverage check needs simulated examples with curves")
        self.examples = usable
        matrix = self._raw(usable)
        self.median_ = np.nan_to_num(np.nanmedian(matrix, axis=0), nan=0.0)
        filled = np.where(np.isnan(matrix), self.median_, matrix)
        spread = filled.std(axis=0)
        self.scale_ = np.where(spread > 0, spread, 1.0)
        self.points_ = filled / self.scale_
        self.index_ = NearestNeighbors().fit(self.points_)

    @staticmethod
    def _raw(examples: Iterable[Example]) -> FloatArray:
        columns = [FEATURES.index(name) for name in NEAREST_FEATURES]
        return feature_matrix((e.host, e.profile) for e in examples)[:, columns]

    def place(self, examples: Sequence[Example]) -> FloatArray:
        """Standardised feature points of other examples (the corpus's medians fill gaps)."""
        matrix = self._raw(examples)
        points: FloatArray = np.where(np.isnan(matrix), self.median_, matrix) / self.scale_
        return points

    def without(self, groups: set[str]) -> CorpusIndex:
        """The same corpus without the examples of ``groups`` (standardised anew)."""
        return CorpusIndex([e for e in self.examples if e.group not in groups])


def case_coverage(
    case: RealCase,
    example: Example,
    index: CorpusIndex,
    *,
    neighbours: int = NEIGHBOURS,
) -> CaseCoverage:
    """The nearest ``neighbours`` of a real case (``example``: its profile) in ``index``."""
    count = min(neighbours, len(index.examples))
    distances, rows = index.index_.kneighbors(index.place([example]), n_neighbors=count)
    found = []
    for distance, row in zip(distances[0], rows[0], strict=True):
        sim = index.examples[int(row)]
        assert sim.curve is not None
        found.append(
            Neighbour(
                workload_id=sim.origin.rsplit(":", 1)[-1],
                group=sim.group,
                distance=float(distance),
                curve_error=shape_error(sim.curve, case.sizes, case.throughput),
            )
        )
    cv = curve_noise(case.samples, case.visits).cv
    return CaseCoverage(workload_id=case.workload_id, cv=cv, neighbours=tuple(found))


def coverage(
    cases: Sequence[RealCase],
    examples: Sequence[Example],
    index: CorpusIndex,
    *,
    neighbours: int = NEIGHBOURS,
) -> list[CaseCoverage]:
    """:func:`case_coverage` of every real case (``examples``: the cases' own, by origin)."""
    by_id = {e.origin.rsplit(":", 1)[-1]: e for e in examples}
    return [
        case_coverage(case, by_id[case.workload_id], index, neighbours=neighbours) for case in cases
    ]
