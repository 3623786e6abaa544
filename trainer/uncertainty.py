"""Honest uncertainty: the novelty model, a model's answers on held-out cases, and the
calibrations fitted from them.

Ranges and gain intervals are conformal: quantiles of held-out residuals normalised by the
model's local scale, fitted apart on simulated held-out cases (the search's validation
split) and real ones (cross-validation), and judged on the very ranges the service serves
(whole sizes, clipped, at least a step either side). Method: docs/trainer.md ("Honest
uncertainty").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

from agents import knobs
from service.recommendations.intervals import REAL, SIMULATED, Calibration, served_range
from service.recommendations.novelty import NOVELTY_FEATURES, NoveltyModel
from service.recommendations.tuple_model import TupleModel
from service.recommendations.workload_features import FEATURES
from trainer.examples import Example, split_by_group
from trainer.features import matrix_of
from trainer.gain import true_gains

#: Fewer real held-out cases than this cannot set a real calibration: the simulated one serves.
MIN_REAL_CALIBRATION = 8
#: The multipliers of the base quantiles tried until the served ranges reach the target.
_MULTIPLIERS = np.round(np.arange(0.0, 6.0001, 0.02), 2)
#: A bound standing for "no limit" where a feature was never measured (JSON has no infinity).
_UNBOUNDED = 1e9


def fit_novelty(
    examples: Sequence[Example], *, seed: int, reference_size: int = 1000, k: int = 5
) -> NoveltyModel | None:
    """The novelty model of ``examples``: standardised log features, the training ranges,
    a reference sample; its unit distance is the 90th percentile of the k-nearest distance
    of a held-out fifth of the workload groups to the rest."""
    if len(examples) < 2 * k:
        return None
    columns = [FEATURES.index(name) for name in NOVELTY_FEATURES]
    raw = matrix_of(examples)[:, columns]
    known = ~np.isnan(raw).all(axis=0)
    center = np.where(known, np.nanmedian(np.where(known, raw, 0.0), axis=0), 0.0)
    spread = np.where(known, np.nanstd(np.where(known, raw, 0.0), axis=0), 1.0)
    scale = np.where(spread > 1e-9, spread, 1.0)
    points = (raw - center) / scale
    low = np.where(known, np.nanmin(np.where(known, points, 0.0), axis=0), -_UNBOUNDED)
    high = np.where(known, np.nanmax(np.where(known, points, 0.0), axis=0), _UNBOUNDED)
    rng = np.random.default_rng(seed)

    def sample(rows: NDArray[np.int64]) -> NDArray[np.float64]:
        chosen = rng.choice(rows, size=min(reference_size, rows.size), replace=False)
        # Rounded as the artifact stores them, so a loaded model answers the same.
        return np.asarray(np.round(np.nan_to_num(points[np.sort(chosen)], nan=0.0), 4))

    _, probe_part = split_by_group(examples, test_fraction=0.2, seed=seed + 31)
    probe_groups = {e.group for e in probe_part}
    in_probe = np.array([e.group in probe_groups for e in examples], dtype=bool)
    probe, rest = np.flatnonzero(in_probe), np.flatnonzero(~in_probe)
    model = NoveltyModel(
        columns=NOVELTY_FEATURES,
        center=center,
        scale=scale,
        low=low,
        high=high,
        reference=sample(np.arange(len(examples), dtype=np.int64)),
        k=k,
        typical=1.0,
    )
    if probe.size and rest.size >= k:
        distances = replace(model, reference=sample(rest)).knn_distance(points[probe])
        typical = float(np.quantile(distances, 0.9))
    else:
        typical = float(np.quantile(model.knn_distance(points), 0.9))
    return replace(model, typical=max(typical, 1e-6))


def default_tuples(
    engine: knobs.Engine, examples: Sequence[Example]
) -> dict[str, NDArray[np.int64]]:
    """The engine default of every tuned knob per example: the tuple a host runs before it is
    tuned, what datasets' profiles were measured at."""
    out: dict[str, NDArray[np.int64]] = {}
    for knob in knobs.tuned_knobs(engine):
        out[knob.name] = np.array(
            [knob.default_for(e.host.cpu_count) for e in examples], dtype=np.int64
        )
    return out


@dataclass
class HeldOut:
    """A model's answers on held-out examples, with what the truth says about them."""

    examples: list[Example]
    values: dict[str, NDArray[np.int64]]
    scales: dict[str, NDArray[np.float64]]
    uppers: dict[str, NDArray[np.float64]]
    novelty: NDArray[np.float64]
    out_of_distribution: NDArray[np.bool_]
    #: Predicted log gain over the default tuple and its scale (None: no throughput curve).
    log_gain: NDArray[np.float64] | None
    gain_scale: NDArray[np.float64] | None
    true_gain: NDArray[np.float64]
    #: Pool sizes the baselines predicted for the same examples (cross-validation folds).
    baselines: dict[str, NDArray[np.float64]] = field(default_factory=dict)

    @property
    def groups(self) -> NDArray[np.str_]:
        return np.array([e.group for e in self.examples])

    def subset(self, rows: NDArray[np.int64]) -> HeldOut:
        def pick(arrays: Mapping[str, NDArray[np.generic]]) -> dict[str, NDArray[np.generic]]:
            return {name: array[rows] for name, array in arrays.items()}

        return HeldOut(
            examples=[self.examples[i] for i in rows],
            values=pick(self.values),  # type: ignore[arg-type]
            scales=pick(self.scales),  # type: ignore[arg-type]
            uppers=pick(self.uppers),  # type: ignore[arg-type]
            novelty=self.novelty[rows],
            out_of_distribution=self.out_of_distribution[rows],
            log_gain=None if self.log_gain is None else self.log_gain[rows],
            gain_scale=None if self.gain_scale is None else self.gain_scale[rows],
            true_gain=self.true_gain[rows],
            baselines=pick(self.baselines),  # type: ignore[arg-type]
        )

    @classmethod
    def concatenate(cls, parts: Sequence[HeldOut]) -> HeldOut:
        first = parts[0]

        def join(get: str, name: str | None = None) -> NDArray[np.generic]:
            arrays = [getattr(p, get) if name is None else getattr(p, get)[name] for p in parts]
            return np.concatenate(arrays)

        gains = all(p.log_gain is not None for p in parts)
        return cls(
            examples=[e for p in parts for e in p.examples],
            values={n: join("values", n) for n in first.values},  # type: ignore[misc]
            scales={n: join("scales", n) for n in first.scales},  # type: ignore[misc]
            uppers={n: join("uppers", n) for n in first.uppers},  # type: ignore[misc]
            novelty=join("novelty"),  # type: ignore[arg-type]
            out_of_distribution=join("out_of_distribution"),  # type: ignore[arg-type]
            log_gain=join("log_gain") if gains else None,  # type: ignore[arg-type]
            gain_scale=join("gain_scale") if gains else None,  # type: ignore[arg-type]
            true_gain=join("true_gain"),  # type: ignore[arg-type]
            baselines={n: join("baselines", n) for n in first.baselines},  # type: ignore[misc]
        )


def held_out(model: TupleModel, examples: Sequence[Example]) -> HeldOut:
    """``model``'s answers on ``examples`` (current tuple: the engine default)."""
    matrix = matrix_of(examples)
    connections = np.array([e.profile.connections for e in examples], dtype=np.float64)
    answers = model.answer_matrix(matrix, connections=connections)
    values = {name: value for name, (value, _, _) in answers.knobs.items()}
    current = default_tuples(model.engine, examples)
    predicted = model.log_gain_matrix(matrix, answers, current)
    return HeldOut(
        examples=list(examples),
        values=values,
        scales=dict(answers.scales),
        uppers=dict(answers.uppers),
        novelty=answers.novelty,
        out_of_distribution=answers.out_of_distribution,
        log_gain=None if predicted is None else predicted[0],
        gain_scale=None if predicted is None else predicted[1],
        true_gain=true_gains(examples, values, {n: current[n] for n in values}),
    )


def _conformal_target(count: int, nominal: float) -> float:
    """The share the calibration set must reach for ``nominal`` coverage of a new case."""
    return min(1.0, math.ceil((count + 1) * nominal) / count)


def _best_values(records: HeldOut, name: str) -> NDArray[np.float64]:
    return np.array(
        [float(e.optimal_tuple.get(name, np.nan)) for e in records.examples], dtype=np.float64
    )


def calibrate_knob(records: HeldOut, name: str, *, nominal: float) -> Calibration | None:
    """The calibration at which the served ranges of knob ``name`` hold ``nominal`` of the
    held-out best values (conformal); None without held-out best values."""
    best = _best_values(records, name)
    rows = np.flatnonzero(np.isfinite(best) & (best >= 1))
    if rows.size == 0 or name not in records.values:
        return None
    best = best[rows]
    values, scales = records.values[name][rows], records.scales[name][rows]
    upper = records.uppers[name][rows]
    knob = knobs.knob(records.examples[int(rows[0])].engine, name)
    residual = (np.log2(best) - np.log2(np.maximum(values, 1))) / np.maximum(scales, 1e-9)
    alpha = 1.0 - nominal
    base_low = min(0.0, float(np.quantile(residual, alpha / 2)))
    base_high = max(0.0, float(np.quantile(residual, 1.0 - alpha / 2)))
    target = _conformal_target(rows.size, nominal)
    calibration = Calibration(base_low * _MULTIPLIERS[-1], base_high * _MULTIPLIERS[-1])
    for multiplier in _MULTIPLIERS:
        candidate = Calibration(base_low * multiplier, base_high * multiplier)
        low, high = served_range(values, scales, candidate, lower=knob.minimum, upper=upper)
        if np.mean((best >= low) & (best <= high)) >= target:
            calibration = candidate
            break
    return Calibration(calibration.low, calibration.high, count=int(rows.size))


def gain_rows(records: HeldOut) -> NDArray[np.int64]:
    """Held-out cases whose gain can be judged: a known truth and a tuple that moved."""
    if records.gain_scale is None:
        return np.empty(0, dtype=np.int64)
    return np.flatnonzero(np.isfinite(records.true_gain) & (records.gain_scale > 0))


def calibrate_gain(records: HeldOut, *, nominal: float) -> Calibration | None:
    """Normalised quantiles of the held-out log-gain residuals (conformal order statistics)
    among the cases where the tuple moves; where it does not the gain is exactly 1."""
    rows = gain_rows(records)
    if rows.size == 0 or records.log_gain is None or records.gain_scale is None:
        return None
    residual = (
        np.log(np.maximum(records.true_gain[rows], 1e-12)) - records.log_gain[rows]
    ) / records.gain_scale[rows]
    count = rows.size
    alpha = 1.0 - nominal
    high_level = min(1.0, math.ceil((count + 1) * (1 - alpha / 2)) / count)
    low_level = max(0.0, math.floor((count + 1) * (alpha / 2)) / count)
    low = min(0.0, float(np.quantile(residual, low_level, method="lower")))
    high = max(0.0, float(np.quantile(residual, high_level, method="higher")))
    return Calibration(low, high, count=int(count))


def calibrations(
    records: Mapping[str, HeldOut], *, nominal: float
) -> tuple[dict[str, dict[str, Calibration]], dict[str, Calibration]]:
    """Per knob, per domain; and the gain's per domain. A real domain needs at least
    :data:`MIN_REAL_CALIBRATION` cases."""
    knob_calibrations: dict[str, dict[str, Calibration]] = {}
    gain_calibrations: dict[str, Calibration] = {}
    for domain, held in records.items():
        minimum = MIN_REAL_CALIBRATION if domain == REAL else 1
        for name in held.values:
            found = calibrate_knob(held, name, nominal=nominal)
            if found is not None and found.count >= minimum:
                knob_calibrations.setdefault(name, {})[domain] = found
        gain = calibrate_gain(held, nominal=nominal)
        if gain is not None and gain.count >= minimum:
            gain_calibrations[domain] = gain
    return knob_calibrations, gain_calibrations


def calibrated(model: TupleModel, records: Mapping[str, HeldOut], *, nominal: float) -> TupleModel:
    """``model`` with the calibrations fitted on ``records`` (by domain); it serves the real
    calibration when there is one."""
    knob_calibrations, gain_calibrations = calibrations(records, nominal=nominal)
    knob_models = {
        name: replace(m, calibration=knob_calibrations.get(name) or m.calibration)
        for name, m in model.knob_models.items()
    }
    curve = model.curve
    if curve is not None and gain_calibrations:
        curve = replace(curve, calibration=gain_calibrations)
    size_name = knobs.POOL_SIZE_KNOB[model.engine]
    serves_real = REAL in knob_calibrations.get(size_name, {})
    return replace(
        model,
        knob_models=knob_models,
        curve=curve,
        domain=REAL if serves_real else SIMULATED,
    )
