"""Score the real cross-validation: regret of the model and the baselines on real workloads
none of them saw, the share within 5 % of the best, and the coverage of ranges and gain
intervals — each workload group judged with a calibration fitted on the other groups only
(nested), since the real calibration itself is fitted on these very answers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from agents import knobs
from agents.sweep import TIE_LOSS
from service.recommendations.intervals import Calibration, gain_interval, served_range
from trainer.evaluation import GainScore, Score, gain_score, score_sizes
from trainer.examples import workload_of
from trainer.paired import RegretComparison, regret_ratio
from trainer.uncertainty import MIN_REAL_CALIBRATION, HeldOut, calibrate_gain, calibrate_knob

#: Within this regret a prediction counts as "at the best": the loss within which a sweep
#: ties a size with its best.
NEAR_BEST = TIE_LOSS


@dataclass
class RealScore:
    scores: dict[str, Score]
    coverage: float
    nominal: float
    gain: GainScore | None
    groups: int
    out_of_distribution: float
    #: Each scored case's origin, in the order of every score's ``predicted`` and ``regrets``.
    cases: tuple[str, ...] = ()
    #: The workload of each case with a curve, in the order of every score's ``regrets``:
    #: what :meth:`versus` draws whole.
    workloads: tuple[str, ...] = ()

    def within(self, name: str) -> float:
        values = self.scores[name].regrets
        return float(np.mean(values <= NEAR_BEST)) if values.size else float("nan")

    def versus(self, a: str, b: str) -> RegretComparison | None:
        """``a``'s mean regret against ``b``'s on the same cases, with bootstrap intervals
        over whole workloads (:mod:`trainer.paired`); None without regrets to compare."""
        left, right = self.scores[a].regrets, self.scores[b].regrets
        if not left.size or left.size != right.size or left.size != len(self.workloads):
            return None
        return regret_ratio(left, right, list(self.workloads), names=(a, b))

    def as_dict(self) -> dict[str, Any]:
        """The registry's ``metrics["heldout"]["real"]``."""
        model = self.scores["lightgbm"]
        out: dict[str, Any] = {
            "regret": model.regret.mean,
            "regret_median": model.regret.median,
            "regret_p90": model.regret.p90,
            "within_5pct": self.within("lightgbm"),
            "coverage": self.coverage,
            "nominal_coverage": self.nominal,
            "count": model.regret.count,
            "groups": self.groups,
            "out_of_distribution": self.out_of_distribution,
        }
        for name, score in self.scores.items():
            if name != "lightgbm":
                out[f"{name}_regret"] = score.regret.mean
                out[f"{name}_within_5pct"] = self.within(name)
        comparisons = [self.versus("lightgbm", name) for name in self.scores if name != "lightgbm"]
        out["paired"] = {c.b: c.as_dict() for c in comparisons if c is not None}
        return out


def score_real(
    records: HeldOut,
    *,
    nominal: float,
    fallback: Calibration | None = None,
    gain_fallback: Calibration | None = None,
) -> RealScore:
    """Scores of the real cross-validation ``records``; a group whose other groups hold too
    few cases for a real calibration is judged with the ``fallback`` (simulated) ones, as the
    service would serve it."""
    engine = records.examples[0].engine
    size_name = knobs.POOL_SIZE_KNOB[engine]
    sizes = records.values[size_name].astype(np.float64)
    scores = {"lightgbm": score_sizes("lightgbm", records.examples, sizes)}
    for name, predicted in records.baselines.items():
        scores[name] = score_sizes(name, records.examples, predicted)
    groups = records.groups
    covered = np.zeros(len(records.examples), dtype=bool)
    estimate = np.full(len(records.examples), np.nan)
    low = np.full(len(records.examples), np.nan)
    high = np.full(len(records.examples), np.nan)
    knob = knobs.knob(engine, size_name)
    best = np.array([e.optimal_size for e in records.examples], dtype=np.float64)
    for group in np.unique(groups):
        rows = np.flatnonzero(groups == group)
        others = records.subset(np.flatnonzero(groups != group))
        calibration = _enough(calibrate_knob(others, size_name, nominal=nominal)) or fallback
        if calibration is not None:
            lo, hi = served_range(
                records.values[size_name][rows],
                records.scales[size_name][rows],
                calibration,
                lower=knob.minimum,
                upper=records.uppers[size_name][rows],
            )
            covered[rows] = (best[rows] >= lo) & (best[rows] <= hi)
        gain_calibration = _enough(calibrate_gain(others, nominal=nominal)) or gain_fallback
        if (
            gain_calibration is not None
            and records.log_gain is not None
            and records.gain_scale is not None
        ):
            estimate[rows], low[rows], high[rows] = gain_interval(
                records.log_gain[rows], records.gain_scale[rows], gain_calibration
            )
    gain = None
    if records.gain_scale is not None and np.isfinite(estimate).any():
        gain = gain_score(estimate, low, high, records.true_gain, records.gain_scale > 0)
    return RealScore(
        scores=scores,
        coverage=float(np.mean(covered)),
        nominal=nominal,
        gain=gain,
        groups=int(np.unique(groups).size),
        out_of_distribution=float(np.mean(records.out_of_distribution)),
        cases=tuple(e.origin for e in records.examples),
        workloads=tuple(workload_of(e.group) for e in records.examples if e.curve is not None),
    )


def _enough(calibration: Calibration | None) -> Calibration | None:
    if calibration is None or calibration.count < MIN_REAL_CALIBRATION:
        return None
    return calibration
