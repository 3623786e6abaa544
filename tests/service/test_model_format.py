from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.knobs import Engine
from agents.wire import HostFacts, WorkloadProfile
from service.recommendations.model_format import (
    FEATURE_NAMES,
    JSON_FORMATS,
    LinearKnobModel,
    LinearPredictor,
    dump_predictor,
    load_predictor,
    profile_features,
)
from service.recommendations.predictor import ArtifactError, Prediction
from service.recommendations.tuple_model import FORMAT as TUPLE_FORMAT
from service.recommendations.tuple_model import FORMAT_V1 as TUPLE_FORMAT_V1
from service.recommendations.tuple_model import TupleModel
from service.recommendations.workload_features import FEATURES
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


class FakeFormatModel:
    """A predictor of a JSON format of its own, loaded through :data:`JSON_FORMATS`."""

    def __init__(self, size: int) -> None:
        self.size = size

    @classmethod
    def from_bytes(cls, artifact: bytes) -> FakeFormatModel:
        return cls(int(json.loads(artifact)["size"]))

    def predict(self, host: HostFacts, profile: WorkloadProfile) -> Prediction:
        return {"thread_pool_size": self.size}, {"thread_pool_size": (1, self.size)}


def test_registered_json_formats_load_through_their_loader(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(JSON_FORMATS, "fake-format/1", FakeFormatModel.from_bytes)
    predictor = load_predictor(b'{"format": "fake-format/1", "size": 9}', allow_pickle=False)
    assert predictor.predict(HOST, profile_model())[0] == {"thread_pool_size": 9}
    with pytest.raises(ArtifactError, match="loader failed: KeyError"):
        load_predictor(b'{"format": "fake-format/1"}')


def tuple_artifact(size_log2: float = 3.0, *, artifact_format: str = TUPLE_FORMAT) -> bytes:
    """A tuple-model artifact written by hand (format 2, or ``artifact_format``): a LightGBM
    booster fitted here (a constant log2 size of ``size_log2``) and a constant for
    oversubscribe; no calibration, novelty or throughput curve."""
    import lightgbm as lgb
    import numpy as np

    rows = np.random.default_rng(0).normal(size=(40, len(FEATURES)))
    booster = lgb.train(
        {"objective": "regression", "verbosity": -1, "min_data_in_leaf": 1, "num_threads": 1},
        lgb.Dataset(rows, np.full(40, size_log2)),
        num_boost_round=3,
    ).model_to_string()
    return json.dumps(
        {
            "format": artifact_format,
            "engine": "mariadb",
            "features": list(FEATURES),
            "quantiles": [0.1, 0.9],
            "knobs": {
                "thread_pool_size": {"median": booster, "low": booster, "high": booster},
                "thread_pool_oversubscribe": {
                    "median": None,
                    "low": None,
                    "high": None,
                    "constant": 2.0,
                },
            },
        }
    ).encode()


def test_a_tuple_model_artifact_loads_and_predicts_in_the_service() -> None:
    predictor = load_predictor(tuple_artifact(3.0), allow_pickle=False)
    assert isinstance(predictor, TupleModel)
    values, ranges = predictor.predict(HOST, profile_model(connections=100))
    assert values == {"thread_pool_size": 8, "thread_pool_oversubscribe": 4}
    # Without a calibration: a step either side, never a point.
    assert ranges["thread_pool_size"] == (7, 9)
    # No more threads than connections.
    few, few_ranges = predictor.predict(HOST, profile_model(connections=5, active_connections=2))
    assert few["thread_pool_size"] == 5
    assert few_ranges["thread_pool_size"] == (4, 5)
    # Without a throughput curve or novelty model, no predicted gain and no flag.
    answer = predictor.recommend(HOST, profile_model(connections=100))
    assert answer.predicted_gain is None and answer.novelty is None
    assert not answer.out_of_distribution


def test_a_format_1_tuple_model_still_loads_with_its_quantile_range() -> None:
    """Artifacts of the first format (promoted before this version) keep serving as they
    did: the quantile boosters' range, widened by nothing."""
    predictor = load_predictor(tuple_artifact(3.0, artifact_format=TUPLE_FORMAT_V1))
    assert isinstance(predictor, TupleModel)
    values, ranges = predictor.predict(HOST, profile_model(connections=100))
    assert values == {"thread_pool_size": 8, "thread_pool_oversubscribe": 4}
    assert ranges["thread_pool_size"] == (8, 8)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"features": ["qps"]}, "different feature list"),
        ({"engine": "oracle"}, "malformed"),
        ({"quantiles": [0.9, 0.1]}, "quantiles"),
        ({"knobs": {"nope": {"median": None, "low": None, "high": None}}}, "malformed"),
        (
            {"knobs": {"thread_pool_size": {"median": "garbage", "low": None, "high": None}}},
            "malformed",
        ),
    ],
)
def test_a_broken_tuple_model_artifact_is_refused(change: dict[str, object], message: str) -> None:
    document = json.loads(tuple_artifact()) | change
    with pytest.raises(ArtifactError, match=message):
        load_predictor(json.dumps(document).encode())


def test_the_service_loads_tuple_models_without_the_trainer(tmp_path: Path) -> None:
    """The service's environment needs no ``trainer`` package: loading and predicting with
    the trainer's artifact imports nothing from it."""
    artifact = tmp_path / "artifact.json"
    artifact.write_bytes(tuple_artifact(2.0))
    script = f"""
import sys
from agents.wire import HostFacts, WorkloadProfile
from service.recommendations.model_format import load_predictor
import service.app
predictor = load_predictor(open({str(artifact)!r}, "rb").read(), allow_pickle=False)
host = HostFacts(hostname="h", engine="mariadb", engine_version="10.11", cpu_count=4,
                 memory_bytes=0)
profile = WorkloadProfile(window_s=10, connections=50, active_connections=4, qps=100, tps=10)
print(predictor.predict(host, profile)[0]["thread_pool_size"])
print(sorted(m for m in sys.modules if m == "trainer" or m.startswith("trainer.")))
"""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        cwd=root,
        env=os.environ | {"PYTHONPATH": str(root)},
    )
    assert done.stdout.split("\n")[:2] == ["4", "[]"]


def test_single_rows_score_as_the_boosters_predict_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request's row goes through LightGBM's single-row entry: the same numbers as
    ``Booster.predict``; without that entry, ``predict`` answers."""
    import lightgbm as lgb
    import numpy as np

    from service.recommendations import booster_scores

    rng = np.random.default_rng(1)
    rows = rng.normal(size=(300, 12))
    rows[rng.random(rows.shape) < 0.1] = np.nan  # unknown measurements route as trained
    booster = lgb.train(
        {"objective": "regression", "verbosity": -1, "num_threads": 1},
        lgb.Dataset(rows, np.nansum(rows[:, :3], axis=1)),
        num_boost_round=40,
    )
    expected = booster.predict(rows)
    one_by_one = [booster_scores.booster_scores(booster, rows[i : i + 1])[0] for i in range(300)]
    assert np.array_equal(one_by_one, expected)
    assert booster_scores._entries[booster] is not None  # the fast entry served them

    def unavailable(*_: object) -> None:
        raise AttributeError("no single-row entry in this LightGBM")

    other = lgb.Booster(model_str=booster.model_to_string())
    monkeypatch.setattr(booster_scores, "_FastRow", unavailable)
    assert booster_scores.booster_scores(other, rows[:1])[0] == expected[0]
    assert booster_scores._entries[other] is None
