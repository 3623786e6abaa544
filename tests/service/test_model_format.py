from __future__ import annotations

import json

import pytest

from agents.knobs import Engine
from agents.wire import HostFacts, WorkloadProfile
from service.recommendations.model_format import (
    FEATURE_NAMES,
    ArtifactError,
    LinearKnobModel,
    LinearPredictor,
    Prediction,
    dump_predictor,
    load_predictor,
    profile_features,
)
from tests.service.factories import host_facts, profile_model


class HalfCores:
    def predict(self, host: HostFacts, profile: WorkloadProfile) -> Prediction:
        size = max(1, host.cpu_count // 2)
        return {"thread_pool_size": size}, {"thread_pool_size": (1, size * 2)}


HOST = HostFacts.model_validate(host_facts(cpu_count=16))


def test_a_linear_predictor_round_trips_through_json() -> None:
    predictor = LinearPredictor(
        engine=Engine.MARIADB,
        knobs={
            "thread_pool_size": LinearKnobModel(
                intercept=0.0,
                coefficients={"log_cpu_count": 1.0, "log_blocking_coefficient": 1.0},
                range_factor=1.5,
            )
        },
    )
    artifact = dump_predictor(predictor)
    assert json.loads(artifact)["kind"] == "linear"
    loaded = load_predictor(artifact, allow_pickle=False)
    values, ranges = loaded.predict(HOST, profile_model())  # 16 * (1 + 3) = 64
    assert values == {"thread_pool_size": 64}
    assert ranges == {"thread_pool_size": (42, 96)}


def test_predictions_are_clipped_to_the_catalog() -> None:
    predictor = LinearPredictor.constant(Engine.MARIADB, {"thread_pool_size": 100000})
    values, ranges = predictor.predict(HOST, profile_model())
    assert values["thread_pool_size"] == 128
    assert ranges["thread_pool_size"] == (128, 128)


def test_a_python_object_round_trips_as_a_pickle() -> None:
    artifact = dump_predictor(HalfCores())
    assert load_predictor(artifact).predict(HOST, profile_model())[0] == {"thread_pool_size": 8}
    with pytest.raises(ArtifactError, match="disabled"):
        load_predictor(artifact, allow_pickle=False)


@pytest.mark.parametrize(
    ("artifact", "message"),
    [
        (b"\xff\xfe", "neither"),
        (b"[]", "not a pooltune.predictor"),
        (b'{"format":"pooltune.predictor","format_version":9}', "format_version"),
        (b'{"format":"pooltune.predictor","format_version":1,"kind":"x"}', "unknown predictor"),
        (
            b'{"format":"pooltune.predictor","format_version":1,"kind":"linear",'
            b'"engine":"mariadb","knobs":{"nope":{"intercept":1}}}',
            "not a knob",
        ),
    ],
)
def test_bad_artifacts_raise_artifact_error(artifact: bytes, message: str) -> None:
    with pytest.raises(ArtifactError, match=message):
        load_predictor(artifact)


def test_features_are_named_and_finite_with_unknowns() -> None:
    profile = profile_model(cpu_ms_per_request=None, wait_ms_per_request=None, latency_ms=None)
    features = profile_features(HOST, profile)
    assert tuple(features) == FEATURE_NAMES
    assert features["blocking_coefficient"] == 0.0


class FakeTrainerModel:
    """Stands in for a JSON format produced by the trainer (loaded by module:attribute)."""

    def __init__(self, size: int) -> None:
        self.size = size

    @classmethod
    def from_bytes(cls, artifact: bytes) -> FakeTrainerModel:
        return cls(int(json.loads(artifact)["size"]))

    def predict(self, host: HostFacts, profile: WorkloadProfile) -> Prediction:
        return {"thread_pool_size": self.size}, {"thread_pool_size": (1, self.size)}


def test_registered_json_formats_load_through_their_loader(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from service.recommendations import model_format

    monkeypatch.setitem(
        model_format.JSON_FORMAT_LOADERS,
        "fake-trainer/1",
        "tests.service.test_model_format:FakeTrainerModel.from_bytes",
    )
    predictor = load_predictor(b'{"format": "fake-trainer/1", "size": 9}', allow_pickle=False)
    assert predictor.predict(HOST, profile_model())[0] == {"thread_pool_size": 9}
    with pytest.raises(ArtifactError, match="loader"):
        load_predictor(b'{"format": "fake-trainer/1"}')


def test_the_trainers_lightgbm_format_is_known() -> None:
    from service.recommendations.model_format import JSON_FORMAT_LOADERS

    assert JSON_FORMAT_LOADERS["pooltune-lightgbm-tuple/1"].startswith("trainer.artifact:")
