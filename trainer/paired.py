"""How sure a comparison of two predictors on the real cross-validation is.

A few dozen real cases of a couple of dozen workloads, two or three of which carry most of
any mean regret, make "0.102 against 0.104" or "0.064 against 0.102" a question of which
workloads happened to be measured. :func:`regret_ratio` answers it with a cluster bootstrap:
whole workload groups are drawn with replacement (cases of one workload are not independent
of each other: one server, one load at several client counts), and the ratio and the
difference of the two predictors' mean regrets are read on every draw, paired on the same
cases. Percentile intervals; docs/trainer.md, "How sure a real comparison is".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from agents.profile import finite_or_none

#: Draws of the bootstrap: enough for the 5% and 95% percentiles to move by under 0.01.
RESAMPLES = 4000
#: The interval's level: 90%, the two one-sided 5% tests of "better" and "worse".
LEVEL = 0.9


@dataclass(frozen=True, slots=True)
class RegretComparison:
    """Predictor ``a`` against ``b`` on the same cases: mean regret of a over b's, and a's
    minus b's, each with its bootstrap interval at ``level``."""

    a: str
    b: str
    ratio: float
    ratio_low: float
    ratio_high: float
    difference: float
    difference_low: float
    difference_high: float
    level: float
    groups: int
    cases: int

    @property
    def verdict(self) -> str:
        """``better`` or ``worse`` when the difference's interval excludes 0, else
        ``tied`` (the data cannot tell them apart)."""
        if self.difference_high < 0:
            return "better"
        if self.difference_low > 0:
            return "worse"
        return "tied"

    def text(self) -> str:
        share = round(self.level * 100)
        return (
            f"{self.a} / {self.b}: {self.ratio:.2f} ({share}%: {self.ratio_low:.2f}–"
            f"{self.ratio_high:.2f}); difference {self.difference:+.4f} "
            f"({self.difference_low:+.4f} to {self.difference_high:+.4f}): {self.verdict}"
        )

    def as_dict(self) -> dict[str, Any]:
        """For the registry's metrics, which hold finite numbers only (an undefined ratio
        is None)."""
        return {
            "against": self.b,
            "ratio": finite_or_none(self.ratio),
            "ratio_interval": [finite_or_none(self.ratio_low), finite_or_none(self.ratio_high)],
            "difference": self.difference,
            "difference_interval": [self.difference_low, self.difference_high],
            "level": self.level,
            "verdict": self.verdict,
            "groups": self.groups,
        }


def regret_ratio(
    a: NDArray[np.float64],
    b: NDArray[np.float64],
    groups: NDArray[np.str_] | list[str],
    *,
    names: tuple[str, str] = ("a", "b"),
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> RegretComparison:
    """Compare regrets ``a`` and ``b`` (one per case, same order) by drawing the workload
    ``groups`` with replacement. The ratio of a draw whose ``b`` regrets are all 0 is left
    out of the ratio's interval (it has none)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    labels = np.asarray(groups)
    if not (a.shape == b.shape == labels.shape) or a.ndim != 1 or a.size == 0:
        raise ValueError(
            f"need one regret of each predictor and one group per case: {a.shape}, "
            f"{b.shape}, {labels.shape}"
        )
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    names_, index = np.unique(labels, return_inverse=True)
    sum_a = np.bincount(index, weights=a)
    sum_b = np.bincount(index, weights=b)
    count = np.bincount(index).astype(np.float64)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, names_.size, size=(resamples, names_.size))
    weight = np.zeros((resamples, names_.size))
    np.add.at(weight, (np.arange(resamples)[:, None], draws), 1.0)
    total_a, total_b, total_n = weight @ sum_a, weight @ sum_b, weight @ count
    difference = (total_a - total_b) / total_n
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = total_a / total_b
    ratios = ratios[np.isfinite(ratios)]
    tail = (1.0 - level) / 2.0
    mean_b = float(b.mean())
    ratio = float(a.mean() / mean_b) if mean_b > 0 else float("nan")
    ratio_low, ratio_high = (
        (float(np.quantile(ratios, tail)), float(np.quantile(ratios, 1.0 - tail)))
        if ratios.size
        else (float("nan"), float("nan"))
    )
    return RegretComparison(
        a=names[0],
        b=names[1],
        ratio=ratio,
        ratio_low=ratio_low,
        ratio_high=ratio_high,
        difference=float(a.mean() - b.mean()),
        difference_low=float(np.quantile(difference, tail)),
        difference_high=float(np.quantile(difference, 1.0 - tail)),
        level=level,
        groups=int(names_.size),
        cases=int(a.size),
    )
