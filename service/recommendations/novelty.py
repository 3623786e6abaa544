"""How far a profile lies from the profiles a model was trained on, and how much that widens
its ranges.

Two signals, both in standardised log features: the mean distance to the ``k`` nearest
training profiles over the distance held-out profiles have (``novelty`` ≈ 1 or less: like the
training data), and how far a feature lies beyond the training range (``excess``, in standard
deviations; beyond ``tolerance`` the profile is *out of distribution*). The ranges a model
serves are widened by :meth:`NoveltyModel.score`'s ``widening``. Why: docs/trainer.md
("Honest uncertainty").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from service.recommendations.workload_features import FEATURES

#: The features distances are measured on: the facts that set a workload's curve.
NOVELTY_FEATURES: tuple[str, ...] = (
    "log_cpu_count",
    "log_connections",
    "log_active_connections",
    "log_qps",
    "log_latency_ms",
    "log_cpu_ms_per_request",
    "log_wait_ms_per_request",
    "log_blocking_coefficient",
    "log_cpu_utilisation",
)
#: How much wider (log size) the range of a profile out of the training ranges is: at least
#: twice as wide once rounded to whole values (a stated prior: there is no data out there).
OOD_WIDENING = 2.5
#: Rows compared with the reference set at once (bounds the memory of a batch).
_CHUNK = 512


@dataclass(frozen=True, slots=True)
class NoveltyScore:
    novelty: NDArray[np.float64]
    excess: NDArray[np.float64]
    out_of_distribution: NDArray[np.bool_]
    #: The factor the ranges' log half-widths are multiplied by (1 in distribution).
    widening: NDArray[np.float64]


@dataclass(frozen=True)
class NoveltyModel:
    columns: tuple[str, ...]
    center: NDArray[np.float64]
    scale: NDArray[np.float64]
    #: The training range of each column, standardised.
    low: NDArray[np.float64]
    high: NDArray[np.float64]
    #: Standardised training profiles the distance is measured to.
    reference: NDArray[np.float64]
    k: int
    #: The k-nearest distance that held-out profiles have (a high quantile): novelty 1.
    typical: float
    tolerance: float = 0.05

    def __post_init__(self) -> None:
        # Precomputed once: the column positions and the reference's squared norms.
        object.__setattr__(self, "_index", np.array([FEATURES.index(c) for c in self.columns]))
        object.__setattr__(self, "_norms", (self.reference**2).sum(axis=1))

    def standardise(self, matrix: NDArray[np.float64]) -> NDArray[np.float64]:
        """The novelty columns of a feature matrix, standardised; unknown values NaN."""
        index: NDArray[np.int64] = self._index  # type: ignore[attr-defined]
        return np.asarray((matrix[:, index] - self.center) / self.scale, dtype=np.float64)

    def knn_distance(self, points: NDArray[np.float64]) -> NDArray[np.float64]:
        """Mean distance to the k nearest reference profiles (unknown values count as the
        median, which adds nothing to a distance)."""
        filled = np.nan_to_num(points, nan=0.0)
        k = min(self.k, self.reference.shape[0])
        norms: NDArray[np.float64] = self._norms  # type: ignore[attr-defined]
        out = np.empty(filled.shape[0], dtype=np.float64)
        for start in range(0, filled.shape[0], _CHUNK):
            block = filled[start : start + _CHUNK]
            squared = norms[None, :] - 2.0 * block @ self.reference.T
            squared += (block**2).sum(axis=1)[:, None]
            nearest = np.partition(squared, k - 1, axis=1)[:, :k]
            out[start : start + _CHUNK] = np.sqrt(np.maximum(nearest, 0.0)).mean(axis=1)
        return out

    def score(self, matrix: NDArray[np.float64]) -> NoveltyScore:
        points = self.standardise(matrix)
        novelty = self.knn_distance(points) / max(self.typical, 1e-9)
        beyond = np.maximum(points - self.high, self.low - points)
        excess = np.nan_to_num(beyond, nan=0.0).clip(min=0.0).max(axis=1)
        ood = excess > self.tolerance
        # Wider the farther from the training profiles, and out of range OOD_WIDENING times
        # wider again.
        widening = np.maximum(novelty, 1.0) * np.where(ood, OOD_WIDENING, 1.0)
        return NoveltyScore(
            novelty=novelty, excess=excess, out_of_distribution=ood, widening=widening
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "columns": list(self.columns),
            "center": self.center.tolist(),
            "scale": self.scale.tolist(),
            "low": self.low.tolist(),
            "high": self.high.tolist(),
            "reference": np.round(self.reference, 4).tolist(),
            "k": self.k,
            "typical": self.typical,
            "tolerance": self.tolerance,
        }

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> NoveltyModel:
        columns = tuple(str(name) for name in spec["columns"])
        unknown = [name for name in columns if name not in FEATURES]
        if unknown:
            raise ValueError(f"novelty columns {unknown} are not features")

        def vector(name: str) -> NDArray[np.float64]:
            values = np.asarray(spec[name], dtype=np.float64)
            if values.shape != (len(columns),):
                raise ValueError(f"novelty {name} must have {len(columns)} values")
            return values

        reference = np.asarray(spec["reference"], dtype=np.float64).reshape(-1, len(columns))
        if reference.shape[0] == 0 or not np.isfinite(reference).all():
            raise ValueError("novelty reference must be a non-empty finite matrix")
        scale = vector("scale")
        if (scale <= 0).any():
            raise ValueError("novelty scale must be positive")
        return cls(
            columns=columns,
            center=vector("center"),
            scale=scale,
            low=vector("low"),
            high=vector("high"),
            reference=reference,
            k=max(1, int(spec["k"])),
            typical=float(spec["typical"]),
            tolerance=float(spec.get("tolerance", 0.05)),
        )
