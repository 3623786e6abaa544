"""The inference half of the trainer's model artifact: bytes → a tuple model → recommendations.

The artifact (format ``pooltune-lightgbm-tuple/2``; ``/1`` still loads) is UTF-8 JSON, no
pickle: per tuned knob LightGBM boosters as model strings and the calibration of its range;
the novelty model; the relative throughput curve that gives the predicted gain. Loading and
predicting need numpy and lightgbm only, and work on whole matrices at once;
:mod:`trainer.artifact` writes it. Layout: docs/trainer.md ("The model artifact").
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import lightgbm as lgb
import numpy as np
from numpy.typing import NDArray

from agents import knobs
from agents.knobs import Engine, Knob
from agents.wire import HostFacts, WorkloadProfile
from service.recommendations.booster_scores import booster_scores
from service.recommendations.intervals import (
    SIMULATED,
    Calibration,
    calibrations_from_dict,
    gain_interval,
    pick,
    served_range,
)
from service.recommendations.novelty import NoveltyModel
from service.recommendations.predictor import (
    ArtifactError,
    GainEstimate,
    Prediction,
    Recommendation,
)
from service.recommendations.throughput_curve import ThroughputCurve
from service.recommendations.workload_features import FEATURES, feature_matrix, size_offset

FORMAT = "pooltune-lightgbm-tuple/2"
#: The first format (quantile range widened by a constant; no novelty, no gain): still read.
FORMAT_V1 = "pooltune-lightgbm-tuple/1"
#: The smallest local half-width of a size range (log2), whatever the quantile boosters say.
MIN_SCALE = 0.25

_CORES = FEATURES.index("cpu_count")


@dataclass(frozen=True)
class KnobModel:
    """The boosters of log2(value) for one knob (or a constant), and its calibration."""

    median: lgb.Booster | None
    low: lgb.Booster | None
    high: lgb.Booster | None
    constant: float | None = None
    #: The boosters predict the residual over :func:`workload_features.size_offset`.
    offset: bool = False
    #: Constant the point booster's scores start from (custom objectives do not learn it).
    init: float = 0.0
    #: Format 1: log2 widening of the quantile range (negative narrows it).
    widen: float = 0.0
    #: Normalised residual quantiles by domain; empty: format 1's quantile range.
    calibration: Mapping[str, Calibration] = field(default_factory=dict)
    #: Secondary knobs: predicted log gain of the knob's best value over its default.
    gain: lgb.Booster | None = None
    #: ... and the gain below which the default is kept (noise).
    min_gain: float = 0.0
    #: Values the point snaps to (the best values seen in training); empty: any whole value.
    choices: tuple[int, ...] = ()

    def point(self, matrix: NDArray[np.float64]) -> NDArray[np.float64]:
        """log2 of the predicted value per row."""
        base = size_offset(matrix) if self.offset else np.zeros(matrix.shape[0])
        if self.median is None:
            return base + (self.constant if self.constant is not None else 0.0)
        return base + self.init + _scores(self.median, matrix)

    def scale(self, matrix: NDArray[np.float64]) -> NDArray[np.float64]:
        """The local half-width (log2) the calibration is normalised by: half the quantile
        boosters' spread, at least :data:`MIN_SCALE`; 1 without quantile boosters."""
        if self.low is None or self.high is None:
            return np.ones(matrix.shape[0])
        spread = (_scores(self.high, matrix) - _scores(self.low, matrix)) / 2.0
        return np.asarray(np.maximum(spread, MIN_SCALE), dtype=np.float64)

    def predict(
        self, matrix: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """Format 1: log2 (value, low, high) per row, the quantile range widened by ``widen``."""
        median = self.point(matrix)
        if self.low is None or self.high is None:
            return median, median, median
        base = size_offset(matrix) if self.offset else np.zeros(matrix.shape[0])
        low = base - self.widen + _scores(self.low, matrix)
        high = base + self.widen + _scores(self.high, matrix)
        # Quantile models are trained apart and may cross; the range must hold the median.
        return median, np.minimum(low, median), np.maximum(high, median)


def _scores(booster: lgb.Booster, matrix: NDArray[np.float64]) -> NDArray[np.float64]:
    return booster_scores(booster, matrix)


def clip_log2_values(
    log2_values: NDArray[np.float64],
    knob: Knob,
    *,
    connections: NDArray[np.float64] | None = None,
) -> NDArray[np.int64]:
    """2**log2_values rounded to whole values inside the knob's bounds and, where
    ``connections`` is given and positive, at most that many (for the pool size: more
    threads than connections never help)."""
    values = np.rint(np.exp2(log2_values))
    return np.clip(values, knob.minimum, upper_bounds(knob, values, connections)).astype(np.int64)


def upper_bounds(
    knob: Knob, like: NDArray[np.float64], connections: NDArray[np.float64] | None
) -> NDArray[np.float64]:
    """The largest value worth serving per row: the catalog's maximum, and for the pool size
    the connection count where known."""
    upper = np.full(like.shape, float(knob.maximum))
    if connections is not None:
        upper = np.where(connections > 0, np.minimum(upper, connections), upper)
    return np.asarray(np.maximum(upper, knob.minimum), dtype=np.float64)


def defaults_for(knob: Knob, cores: NDArray[np.float64]) -> NDArray[np.int64]:
    """The knob's default per row of host cores."""
    if knob.default_is_cpu_count:
        return np.clip(np.rint(cores), knob.minimum, knob.maximum).astype(np.int64)
    return np.full(cores.shape, knob.default_for(1), dtype=np.int64)


def snap(log2_values: NDArray[np.float64], choices: tuple[int, ...]) -> NDArray[np.float64]:
    """Each log2 value moved to the nearest of ``choices`` (in log space)."""
    if not choices:
        return log2_values
    grid = np.log2(np.asarray(choices, dtype=np.float64))
    nearest = np.abs(log2_values[:, None] - grid[None, :]).argmin(axis=1)
    return np.asarray(grid[nearest], dtype=np.float64)


@dataclass(frozen=True)
class Answers:
    """A batch of answers: per knob (value, low, high), and per row how novel the profile is."""

    knobs: dict[str, tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]]
    novelty: NDArray[np.float64]
    out_of_distribution: NDArray[np.bool_]
    widening: NDArray[np.float64]
    #: Secondary knobs: the predicted log gain of their best value over the default.
    secondary_gain: dict[str, NDArray[np.float64]] = field(default_factory=dict)
    #: Per knob: the scale its calibration multiplies (local width × widening), and the
    #: largest value worth serving (the catalog; the connections for the pool size).
    scales: dict[str, NDArray[np.float64]] = field(default_factory=dict)
    uppers: dict[str, NDArray[np.float64]] = field(default_factory=dict)


@dataclass(frozen=True)
class TupleModel:
    """A trained profile → tuple model for one engine."""

    engine: Engine
    knob_models: Mapping[str, KnobModel]
    features: tuple[str, ...] = FEATURES
    quantiles: tuple[float, float] = (0.1, 0.9)
    novelty: NoveltyModel | None = None
    curve: ThroughputCurve | None = None
    #: Which calibration the service serves (real hosts: the real one when it exists).
    domain: str = SIMULATED

    @property
    def nominal_coverage(self) -> float:
        return self.quantiles[1] - self.quantiles[0]

    def answer_matrix(
        self,
        matrix: NDArray[np.float64],
        *,
        connections: NDArray[np.float64],
        domain: str | None = None,
    ) -> Answers:
        """Per knob: (value, low, high) arrays, whole, inside the catalog; ranges calibrated
        for ``domain`` (the model's own by default) and widened with the novelty."""
        rows = matrix.shape[0]
        if self.novelty is not None:
            score = self.novelty.score(matrix)
            novelty, ood, widening = score.novelty, score.out_of_distribution, score.widening
        else:
            novelty, ood, widening = np.full(rows, np.nan), np.zeros(rows, bool), np.ones(rows)
        size_name = knobs.POOL_SIZE_KNOB[self.engine]
        cores = matrix[:, _CORES]
        answers: dict[str, tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]] = {}
        secondary_gain: dict[str, NDArray[np.float64]] = {}
        scales: dict[str, NDArray[np.float64]] = {}
        uppers: dict[str, NDArray[np.float64]] = {}
        for name, model in self.knob_models.items():
            knob = knobs.knob(self.engine, name)
            cap = connections if name == size_name else None
            calibration = pick(model.calibration, domain or self.domain)
            if calibration is None:
                value, low, high = (
                    clip_log2_values(v, knob, connections=cap) for v in model.predict(matrix)
                )
                answers[name] = (value, low, high)
                continue
            if model.gain is not None:
                # A secondary knob: its own value only where the predicted gain passes the
                # noise; the point booster is asked only for those rows.
                gain = _scores(model.gain, matrix)
                secondary_gain[name] = gain
                moves = gain > math.log1p(model.min_gain)
                value = defaults_for(knob, cores)
                if moves.any():
                    point = snap(model.point(matrix[moves]), model.choices)
                    value[moves] = clip_log2_values(point, knob)
            else:
                point = snap(model.point(matrix), model.choices)
                value = clip_log2_values(point, knob, connections=cap)
            scales[name] = model.scale(matrix) * widening
            uppers[name] = upper_bounds(knob, value.astype(np.float64), cap)
            low, high = served_range(
                value, scales[name], calibration, lower=float(knob.minimum), upper=uppers[name]
            )
            answers[name] = (value, low, high)
        return Answers(
            knobs=answers,
            novelty=novelty,
            out_of_distribution=ood,
            widening=widening,
            secondary_gain=secondary_gain,
            scales=scales,
            uppers=uppers,
        )

    def predict_matrix(
        self, matrix: NDArray[np.float64], *, connections: NDArray[np.float64]
    ) -> dict[str, tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]]:
        """Per knob: (value, low, high) arrays, rounded and clipped to the catalog."""
        return self.answer_matrix(matrix, connections=connections).knobs

    def gain_matrix(
        self,
        matrix: NDArray[np.float64],
        answers: Answers,
        current: Mapping[str, NDArray[np.int64]],
        *,
        domain: str | None = None,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]] | None:
        """Predicted throughput at the answered tuple / at ``current`` (per knob, per row),
        with its interval; None when the model has no throughput curve."""
        if self.curve is None:
            return None
        calibration = pick(self.curve.calibration, domain or self.domain)
        predicted = self.log_gain_matrix(matrix, answers, current)
        if calibration is None or predicted is None:
            return None
        return gain_interval(*predicted, calibration)

    def log_gain_matrix(
        self,
        matrix: NDArray[np.float64],
        answers: Answers,
        current: Mapping[str, NDArray[np.int64]],
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
        """(predicted log gain, the scale its calibration multiplies) of the answered tuple
        over ``current``. A secondary knob moved off its default adds its predicted gain."""
        if self.curve is None:
            return None
        size_name = knobs.POOL_SIZE_KNOB[self.engine]
        log_gain, scale = self.curve.size_gain(
            matrix,
            answers.knobs[size_name][0].astype(np.float64),
            current[size_name].astype(np.float64),
        )
        cores = matrix[:, _CORES]
        for name, gain in answers.secondary_gain.items():
            default = defaults_for(knobs.knob(self.engine, name), cores)
            value = answers.knobs[name][0]
            moved = (current[name] == default) & (value != default)
            log_gain = log_gain + np.where(moved, np.maximum(gain, 0.0), 0.0)
            scale = np.where(moved, np.maximum(scale, self.curve.min_scale), scale)
        return log_gain, scale * answers.widening

    def predict(self, host: HostFacts, profile: WorkloadProfile) -> Prediction:
        """The start tuple and a plausible (low, high) range per knob for one workload."""
        recommendation = self.recommend(host, profile)
        return recommendation.values, recommendation.ranges

    def recommend(
        self,
        host: HostFacts,
        profile: WorkloadProfile,
        current: Mapping[str, int] | None = None,
    ) -> Recommendation:
        """The start tuple, ranges, novelty and predicted gain over ``current`` (the engine
        default where it names no value) for one workload."""
        if host.engine != self.engine:
            raise ArtifactError(f"model is for {self.engine.value}, host runs {host.engine.value}")
        matrix = feature_matrix([(host, profile)])
        answers = self.answer_matrix(
            matrix, connections=np.array([profile.connections], dtype=np.float64)
        )
        values = {name: int(v[0]) for name, (v, _, _) in answers.knobs.items()}
        ranges = {name: (int(lo[0]), int(hi[0])) for name, (_, lo, hi) in answers.knobs.items()}
        defaults = knobs.default_tuple(self.engine, host.cpu_count)
        in_force = {
            name: np.array([int((current or {}).get(name, defaults[name]))])
            for name in answers.knobs
        }
        gain = self.gain_matrix(matrix, answers, in_force)
        novelty = float(answers.novelty[0])
        return Recommendation(
            values=values,
            ranges=ranges,
            predicted_gain=None
            if gain is None
            else GainEstimate(float(gain[0][0]), float(gain[1][0]), float(gain[2][0])),
            novelty=novelty if math.isfinite(novelty) else None,
            out_of_distribution=bool(answers.out_of_distribution[0]),
        )

    @classmethod
    def from_bytes(cls, artifact: bytes) -> TupleModel:
        """Load an artifact; :class:`ArtifactError` names what is wrong with it."""
        try:
            document = json.loads(artifact)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ArtifactError(f"artifact is not JSON: {exc}") from exc
        found = document.get("format") if isinstance(document, dict) else type(document).__name__
        if found not in (FORMAT, FORMAT_V1):
            raise ArtifactError(
                f"unknown artifact format {found!r}; this version reads {FORMAT!r} and "
                f"{FORMAT_V1!r}"
            )
        try:
            return _tuple_model(document)
        except (KeyError, TypeError, ValueError, AttributeError, lgb.basic.LightGBMError) as exc:
            raise ArtifactError(f"artifact is malformed: {exc}") from exc


def _tuple_model(document: Mapping[str, Any]) -> TupleModel:
    features = tuple(document["features"])
    if features != FEATURES:
        raise ArtifactError(
            "artifact was trained on a different feature list; retrain it with this version"
        )
    engine = Engine(document["engine"])
    current = document["format"] == FORMAT
    knob_models = {
        str(name): _knob_model(spec, current=current) for name, spec in document["knobs"].items()
    }
    for name in knob_models:
        knobs.knob(engine, name)
    low, high = (float(q) for q in document.get("quantiles", (0.1, 0.9)))
    if not (0 < low < high < 1) or math.isnan(low):
        raise ArtifactError(f"artifact quantiles {low}, {high} are not 0 < low < high < 1")
    novelty = document.get("novelty")
    curve = document.get("throughput_curve")
    return TupleModel(
        engine=engine,
        knob_models=knob_models,
        features=features,
        quantiles=(low, high),
        novelty=None if novelty is None else NoveltyModel.from_dict(novelty),
        curve=None
        if curve is None
        else ThroughputCurve(
            booster=lgb.Booster(model_str=curve["booster"]),
            calibration=calibrations_from_dict(curve.get("calibration")),
            min_scale=float(curve.get("min_scale", 0.5)),
        ),
        domain=str(document.get("domain", SIMULATED)),
    )


#: What a format-2 knob without a calibration serves: a step either side of its value.
NO_SPREAD = {SIMULATED: Calibration(low=0.0, high=0.0)}


def _knob_model(spec: Mapping[str, Any], *, current: bool) -> KnobModel:
    """One knob of the artifact; a format-1 knob keeps format 1's quantile range."""

    def booster(text: str | None) -> lgb.Booster | None:
        return None if text is None else lgb.Booster(model_str=text)

    constant = spec.get("constant")
    return KnobModel(
        median=booster(spec["median"]),
        low=booster(spec["low"]),
        high=booster(spec["high"]),
        constant=None if constant is None else float(constant),
        offset=bool(spec.get("offset", False)),
        init=float(spec.get("init", 0.0)),
        widen=float(spec.get("widen", 0.0)),
        calibration=calibrations_from_dict(spec.get("calibration"))
        or (NO_SPREAD if current else {}),
        gain=booster(spec.get("gain")),
        min_gain=float(spec.get("min_gain", 0.0)),
        choices=tuple(int(v) for v in spec.get("choices", ())),
    )
