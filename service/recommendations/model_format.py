"""Model artifacts: the bytes in ``model_versions.artifact``, turned into a predictor.

Three encodings, told apart by their first bytes (details: docs/trainer.md, "The model
artifact"):

- JSON ``pooltune.predictor`` spec, kind ``linear`` (:class:`LinearPredictor`): data only;
- another JSON format named in :data:`JSON_FORMATS`, e.g. the trainer's LightGBM tuple model
  (:mod:`service.recommendations.tuple_model`);
- a pickle (``PICKLE_MAGIC``), loaded only when pickles are allowed, after the sha256 check.

:func:`dump_predictor` writes an artifact and :func:`load_predictor` reads one.
"""

from __future__ import annotations

import hashlib
import json
import math
import pickle
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agents.knobs import Engine, catalog
from agents.wire import HostFacts, WorkloadProfile
from service.recommendations import tuple_model
from service.recommendations.predictor import ArtifactError as ArtifactError
from service.recommendations.predictor import Prediction as Prediction
from service.recommendations.predictor import Predictor as Predictor

FORMAT_NAME = "pooltune.predictor"
FORMAT_VERSION = 1
PICKLE_MAGIC = b"PTPKL1\n"

#: JSON artifact formats by their ``"format"`` field: a loader ``bytes -> predictor``.
JSON_FORMATS: dict[str, Callable[[bytes], Predictor]] = {
    tuple_model.FORMAT: tuple_model.TupleModel.from_bytes,
    tuple_model.FORMAT_V1: tuple_model.TupleModel.from_bytes,
}


def artifact_sha256(artifact: bytes) -> str:
    return hashlib.sha256(artifact).hexdigest()


def profile_features(host: HostFacts, profile: WorkloadProfile) -> dict[str, float]:
    """The linear predictor's named features; unknown (``None``) measurements are 0.0 and logs
    are ``log1p``, so defined at 0. (Tuple models read :mod:`workload_features` instead.)"""
    blocking = profile.blocking_coefficient

    def known(value: float | None) -> float:
        return 0.0 if value is None else float(value)

    return {
        "bias": 1.0,
        "cpu_count": float(host.cpu_count),
        "log_cpu_count": math.log(host.cpu_count),
        "memory_gib": host.memory_bytes / 2**30,
        "connections": float(profile.connections),
        "log_connections": math.log1p(profile.connections),
        "active_connections": profile.active_connections,
        "log_active_connections": math.log1p(profile.active_connections),
        "qps": profile.qps,
        "tps": profile.tps,
        "log_qps": math.log1p(profile.qps),
        "read_fraction": known(profile.read_fraction),
        "latency_ms": known(profile.latency_ms),
        "cpu_ms_per_request": known(profile.cpu_ms_per_request),
        "wait_ms_per_request": known(profile.wait_ms_per_request),
        "blocking_coefficient": known(blocking),
        "log_blocking_coefficient": math.log1p(known(blocking)),
        "rounds_per_request": known(profile.rounds_per_request),
        "think_ms": known(profile.think_ms),
        "io_reads_per_txn": known(profile.io_reads_per_txn),
        "fsyncs_per_txn": known(profile.fsyncs_per_txn),
        "lock_waits_per_s": known(profile.lock_waits_per_s),
        "thread_create_ms": known(profile.thread_create_ms),
    }


FEATURE_NAMES: tuple[str, ...] = tuple(
    profile_features(
        HostFacts(
            hostname="h", engine=Engine.MARIADB, engine_version="0", cpu_count=1, memory_bytes=0
        ),
        WorkloadProfile(window_s=1, connections=0, active_connections=0, qps=0, tps=0),
    )
)


@dataclass(frozen=True, slots=True)
class LinearKnobModel:
    """value = intercept + Σ coefficient·feature (exp() of it when ``log_space``)."""

    intercept: float
    coefficients: Mapping[str, float] = field(default_factory=dict)
    log_space: bool = True
    #: The plausible range is [value / range_factor, value * range_factor].
    range_factor: float = 2.0

    def evaluate(self, features: Mapping[str, float]) -> float:
        linear = self.intercept + sum(
            weight * features[name] for name, weight in self.coefficients.items()
        )
        return math.exp(min(linear, 700.0)) if self.log_space else linear


@dataclass(frozen=True, slots=True)
class LinearPredictor:
    """The built-in predictor: one :class:`LinearKnobModel` per knob of one engine."""

    engine: Engine
    knobs: Mapping[str, LinearKnobModel]

    def __post_init__(self) -> None:
        knob_catalog = catalog(self.engine)
        if not self.knobs:
            raise ArtifactError("a linear predictor needs at least one knob")
        for name, model in self.knobs.items():
            if name not in knob_catalog:
                raise ArtifactError(f"{name!r} is not a knob of {self.engine.value}")
            unknown = set(model.coefficients) - set(FEATURE_NAMES)
            if unknown:
                raise ArtifactError(f"unknown features for {name}: {sorted(unknown)}")
            if model.range_factor < 1.0 or not math.isfinite(model.range_factor):
                raise ArtifactError(f"range_factor of {name} must be a finite number >= 1")

    @classmethod
    def constant(
        cls, engine: Engine, values: Mapping[str, int], *, range_factor: float = 2.0
    ) -> LinearPredictor:
        """Always answers ``values``: handy in tests and as a fleet-wide starting point."""
        return cls(
            engine=engine,
            knobs={
                name: LinearKnobModel(
                    intercept=float(value), log_space=False, range_factor=range_factor
                )
                for name, value in values.items()
            },
        )

    def predict(self, host: HostFacts, profile: WorkloadProfile) -> Prediction:
        features = profile_features(host, profile)
        knob_catalog = catalog(self.engine)
        values: dict[str, int] = {}
        ranges: dict[str, tuple[int, int]] = {}
        for name, model in self.knobs.items():
            knob = knob_catalog[name]
            raw = model.evaluate(features)
            if not math.isfinite(raw):
                raise ArtifactError(f"{name}: the model gave {raw}")
            value = knob.clip(raw)
            ranges[name] = (
                knob.clip(math.floor(raw / model.range_factor)),
                knob.clip(math.ceil(raw * model.range_factor)),
            )
            values[name] = value
        return values, ranges

    def to_spec(self) -> dict[str, Any]:
        return {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "kind": "linear",
            "engine": self.engine.value,
            "knobs": {
                name: {
                    "intercept": model.intercept,
                    "coefficients": dict(model.coefficients),
                    "log_space": model.log_space,
                    "range_factor": model.range_factor,
                }
                for name, model in self.knobs.items()
            },
        }

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> LinearPredictor:
        try:
            knobs = {
                str(name): LinearKnobModel(
                    intercept=float(entry["intercept"]),
                    coefficients={
                        str(k): float(v) for k, v in dict(entry.get("coefficients", {})).items()
                    },
                    log_space=bool(entry.get("log_space", True)),
                    range_factor=float(entry.get("range_factor", 2.0)),
                )
                for name, entry in dict(spec["knobs"]).items()
            }
            return cls(engine=Engine(spec["engine"]), knobs=knobs)
        except (KeyError, TypeError, ValueError) as exc:
            raise ArtifactError(f"invalid linear predictor spec: {exc}") from exc


def dump_predictor(predictor: Predictor) -> bytes:
    """The artifact bytes for ``predictor``: a JSON spec for built-ins, else a pickle."""
    if isinstance(predictor, LinearPredictor):
        return json.dumps(predictor.to_spec(), sort_keys=True, separators=(",", ":")).encode()
    return PICKLE_MAGIC + pickle.dumps(predictor, protocol=pickle.HIGHEST_PROTOCOL)


def load_predictor(artifact: bytes, *, allow_pickle: bool = True) -> Predictor:
    """Turn artifact bytes into a predictor; :class:`ArtifactError` if that is impossible."""
    if artifact.startswith(PICKLE_MAGIC):
        if not allow_pickle:
            raise ArtifactError("pickle artifacts are disabled (POOLTUNE_ALLOW_PICKLE_MODELS)")
        try:
            predictor = pickle.loads(artifact[len(PICKLE_MAGIC) :])  # noqa: S301 - trusted, sha-checked
        except Exception as exc:
            raise ArtifactError(f"cannot unpickle the artifact: {exc}") from exc
        if not isinstance(predictor, Predictor):
            raise ArtifactError(f"{type(predictor).__name__} has no predict(host, profile)")
        return predictor
    try:
        spec = json.loads(artifact)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtifactError(f"the artifact is neither a JSON spec nor a pickle: {exc}") from exc
    if not isinstance(spec, dict):
        raise ArtifactError(f"the JSON artifact is not a {FORMAT_NAME} document")
    loader = JSON_FORMATS.get(str(spec.get("format")))
    if loader is not None:
        try:
            predictor = loader(artifact)
        except ArtifactError:
            raise
        except Exception as exc:  # a loader's own failure (bad data, a LightGBM error, ...)
            raise ArtifactError(
                f"the {spec.get('format')} loader failed: {type(exc).__name__}: {exc}"
            ) from exc
        if not isinstance(predictor, Predictor):
            raise ArtifactError(f"{type(predictor).__name__} has no predict(host, profile)")
        return predictor
    if spec.get("format") != FORMAT_NAME:
        raise ArtifactError(f"the JSON artifact is not a {FORMAT_NAME} document")
    if spec.get("format_version") != FORMAT_VERSION:
        raise ArtifactError(f"unsupported format_version {spec.get('format_version')!r}")
    kind = spec.get("kind")
    if kind == "linear":
        return LinearPredictor.from_spec(spec)
    raise ArtifactError(f"unknown predictor kind {kind!r}")
