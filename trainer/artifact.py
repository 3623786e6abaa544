"""The model artifact: what the trainer registers and the service loads to recommend.

An artifact is UTF-8 JSON (no pickle: loading it executes no code), holding for each tuned knob
three LightGBM boosters as text — the median and two quantiles of log2(optimal value) — plus the
feature list they were trained on. ``predict(host, profile)`` answers the start tuple and a
plausible range per knob, clipped to the knob catalog and, for the pool size, to the number of
connections (more threads than connections never help).

Only numpy, lightgbm and :mod:`agents` are needed to load and predict, so the service can use it
without the trainer's other dependencies.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import lightgbm as lgb
import numpy as np
from numpy.typing import NDArray

from agents import knobs
from agents.knobs import Engine
from agents.wire import HostFacts, WorkloadProfile
from trainer.features import FEATURES, feature_matrix, size_offset

FORMAT = "pooltune-lightgbm-tuple/1"


class ArtifactError(ValueError):
    """The bytes are not a model artifact this version can load."""


@dataclass(frozen=True)
class KnobModel:
    """Median and quantile boosters of log2(value) for one knob; or a constant."""

    median: lgb.Booster | None
    low: lgb.Booster | None
    high: lgb.Booster | None
    constant: float | None = None
    #: The boosters predict the residual over :func:`trainer.features.size_offset`.
    offset: bool = False
    #: Constant the point booster's scores start from (custom objectives do not learn it).
    init: float = 0.0
    #: log2 widening of the quantile range from conformal calibration (negative narrows it).
    widen: float = 0.0

    def predict(self, matrix: NDArray[np.float64]) -> tuple[NDArray[np.float64], ...]:
        base = size_offset(matrix) if self.offset else np.zeros(matrix.shape[0])
        if self.median is None or self.low is None or self.high is None:
            value = base + (self.constant if self.constant is not None else 0.0)
            return value, value, value
        median = base + self.init + np.asarray(self.median.predict(matrix), dtype=np.float64)
        low = base - self.widen + np.asarray(self.low.predict(matrix), dtype=np.float64)
        high = base + self.widen + np.asarray(self.high.predict(matrix), dtype=np.float64)
        # Quantile models are trained apart and may cross; the range must hold the median.
        return median, np.minimum(low, median), np.maximum(high, median)


@dataclass(frozen=True)
class TupleModel:
    """A trained profile → tuple model for one engine."""

    engine: Engine
    knob_models: Mapping[str, KnobModel]
    features: tuple[str, ...] = FEATURES
    quantiles: tuple[float, float] = (0.1, 0.9)

    def predict_matrix(
        self, matrix: NDArray[np.float64], *, connections: NDArray[np.float64]
    ) -> dict[str, tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]]:
        """Per knob: (value, low, high) arrays, rounded and clipped to the catalog."""
        size_name = knobs.POOL_SIZE_KNOB[self.engine]
        answers = {}
        for name, knob_model in self.knob_models.items():
            knob = knobs.knob(self.engine, name)
            arrays = []
            for log2_values in knob_model.predict(matrix):
                values = np.rint(np.exp2(log2_values))
                upper = np.full_like(values, knob.maximum, dtype=np.float64)
                if name == size_name:
                    upper = np.where(connections > 0, np.minimum(upper, connections), upper)
                arrays.append(
                    np.clip(values, knob.minimum, np.maximum(upper, knob.minimum)).astype(np.int64)
                )
            answers[name] = (arrays[0], arrays[1], arrays[2])
        return answers

    def predict(
        self, host: HostFacts, profile: WorkloadProfile
    ) -> tuple[dict[str, int], dict[str, tuple[int, int]]]:
        """The start tuple and a plausible (low, high) range per knob for one workload."""
        if host.engine != self.engine:
            raise ArtifactError(f"model is for {self.engine.value}, host runs {host.engine.value}")
        matrix = feature_matrix([(host, profile)])
        answers = self.predict_matrix(
            matrix,
            connections=np.array([profile.connections], dtype=np.float64),
        )
        start = {name: int(value[0]) for name, (value, _, _) in answers.items()}
        ranges = {name: (int(low[0]), int(high[0])) for name, (_, low, high) in answers.items()}
        return start, ranges

    def to_bytes(self) -> bytes:
        def booster(b: lgb.Booster | None) -> str | None:
            return None if b is None else b.model_to_string()

        document: dict[str, Any] = {
            "format": FORMAT,
            "engine": self.engine.value,
            "features": list(self.features),
            "quantiles": list(self.quantiles),
            "knobs": {
                name: {
                    "median": booster(m.median),
                    "low": booster(m.low),
                    "high": booster(m.high),
                    "constant": m.constant,
                    "offset": m.offset,
                    "init": m.init,
                    "widen": m.widen,
                }
                for name, m in self.knob_models.items()
            },
        }
        return json.dumps(document, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, artifact: bytes) -> TupleModel:
        try:
            document = json.loads(artifact)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ArtifactError(f"artifact is not JSON: {exc}") from exc
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            found = (
                document.get("format") if isinstance(document, dict) else type(document).__name__
            )
            raise ArtifactError(f"unknown artifact format {found!r}; this version reads {FORMAT!r}")
        features = tuple(document["features"])
        if features != FEATURES:
            raise ArtifactError(
                "artifact was trained on a different feature list; retrain it with this version"
            )

        def booster(text: str | None) -> lgb.Booster | None:
            return None if text is None else lgb.Booster(model_str=text)

        try:
            engine = Engine(document["engine"])
            knob_models = {
                name: KnobModel(
                    median=booster(spec["median"]),
                    low=booster(spec["low"]),
                    high=booster(spec["high"]),
                    constant=spec.get("constant"),
                    offset=bool(spec.get("offset", False)),
                    init=float(spec.get("init", 0.0)),
                    widen=float(spec.get("widen", 0.0)),
                )
                for name, spec in document["knobs"].items()
            }
            for name in knob_models:
                knobs.knob(engine, name)
        except (KeyError, TypeError, ValueError, lgb.basic.LightGBMError) as exc:
            raise ArtifactError(f"artifact is malformed: {exc}") from exc
        low, high = document.get("quantiles", (0.1, 0.9))
        if not (0 < low < high < 1) or math.isnan(low):
            raise ArtifactError(f"artifact quantiles {low}, {high} are not 0 < low < high < 1")
        return cls(engine=engine, knob_models=knob_models, features=features, quantiles=(low, high))
