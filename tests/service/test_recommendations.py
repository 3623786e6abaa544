from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest
from httpx import AsyncClient
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from agents.knobs import Engine
from agents.wire import HostFacts, WorkloadProfile
from service.recommendations import predictor_cache
from service.recommendations.model_format import dump_predictor
from service.recommendations.models import RecommendationLog
from service.recommendations.predictor import Prediction
from service.recommendations.tuple_model import TupleModel
from service.registry import service as registry_service
from service.registry.models import ModelVersion
from tests.service.factories import (
    auth,
    create_agent,
    create_model_version,
    host_facts,
    recommendation_request,
)

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


class ExplodingPredictor:
    """A model whose predict() fails: the service must answer from the heuristic."""

    def predict(self, host: HostFacts, profile: WorkloadProfile) -> Prediction:
        raise RuntimeError("boom")


class NonsensePredictor:
    def predict(self, host: HostFacts, profile: WorkloadProfile) -> Prediction:
        return {"no_such_knob": 3}, {}


@pytest.fixture
def agent_token(db_session: Session) -> tuple[str, dict[str, Any], int]:
    agent, token, facts = create_agent(db_session, cpu_count=8)
    return token, facts.model_dump(mode="json"), agent.host_id


async def _recommend(
    client: AsyncClient, token: str, facts: dict[str, Any], **profile: Any
) -> dict[str, Any]:
    response = await client.post(
        "/v1/recommendations", json=recommendation_request(facts, **profile), headers=auth(token)
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_without_a_model_the_heuristic_answers(
    api_client: AsyncClient, agent_token: tuple[str, dict[str, Any], int]
) -> None:
    token, facts, _ = agent_token
    body = await _recommend(api_client, token, facts)  # W/S = 1.2 / 0.4 = 3
    assert body["source"] == "heuristic"
    assert body["model_version"] is None
    assert body["start_tuple"]["values"]["thread_pool_size"] == 8 * (1 + 3)
    assert body["ranges"]["thread_pool_size"] == {"low": 16, "high": 64}
    assert body["start_tuple"]["values"]["thread_pool_stall_limit"] == 500
    # The heuristic states no gain nor novelty: the fields are left out, as before they existed.
    assert not {"predicted_gain", "novelty", "out_of_distribution"} & set(body)


@pytest.mark.parametrize(
    ("facts", "profile", "expected"),
    [
        ({"cpu_count": 8}, {"connections": 10, "active_connections": 5.0}, 10),
        ({"cpu_count": 64}, {}, 128),
        (
            {"cpu_count": 6},
            {"cpu_ms_per_request": None, "wait_ms_per_request": None, "latency_ms": None},
            6,
        ),
        ({"cpu_count": 4}, {"wait_ms_per_request": None, "latency_ms": 2.0}, 4 * 5),
        (
            {"cpu_count": 4, "engine": "pgbouncer"},
            {"connections": 0, "active_connections": 0.0},
            16,
        ),
    ],
)
async def test_heuristic_is_cores_times_one_plus_w_over_s_clipped(
    api_client: AsyncClient,
    admin_headers: dict[str, str],
    facts: dict[str, Any],
    profile: dict[str, Any],
    expected: int,
) -> None:
    body = await _recommend(
        api_client, admin_headers["Authorization"].split()[1], host_facts(**facts), **profile
    )
    size_knob = "default_pool_size" if facts.get("engine") == "pgbouncer" else "thread_pool_size"
    assert body["start_tuple"]["values"][size_knob] == expected
    assert body["ranges"][size_knob]["low"] <= expected <= body["ranges"][size_knob]["high"]


async def test_a_promoted_model_answers_and_is_logged(
    api_client: AsyncClient, db_session: Session, agent_token: tuple[str, dict[str, Any], int]
) -> None:
    token, facts, host_id = agent_token
    version = create_model_version(db_session, values={"thread_pool_size": 5}, promote=True)
    body = await _recommend(api_client, token, facts)
    assert body["source"] == "model"
    assert body["model_version"] == "const:1"
    assert body["start_tuple"]["values"]["thread_pool_size"] == 5
    assert body["ranges"]["thread_pool_size"] == {"low": 2, "high": 10}
    # Tuned knobs the model leaves out come from the heuristic.
    assert body["start_tuple"]["values"]["thread_pool_oversubscribe"] == 3
    logged = db_session.scalars(select(RecommendationLog)).all()
    assert len(logged) == 1
    assert logged[0].model_version_id == version.id
    assert logged[0].model_version == "const:1"
    assert logged[0].host_id == host_id
    assert logged[0].start_tuple["thread_pool_size"] == 5
    assert logged[0].fallback_reason is None


async def test_promotion_switches_the_answer_without_restart(
    api_client: AsyncClient,
    admin_headers: dict[str, str],
    db_session: Session,
    agent_token: tuple[str, dict[str, Any], int],
) -> None:
    token, facts, _ = agent_token
    assert (await _recommend(api_client, token, facts))["source"] == "heuristic"

    first = create_model_version(
        db_session, values={"thread_pool_size": 5}, metrics={"regret": 0.2}
    )
    promoted = await api_client.post(
        f"/v1/models/{first.id}/promote", json={"reason": "first"}, headers=admin_headers
    )
    assert promoted.status_code == 200, promoted.text
    assert (await _recommend(api_client, token, facts))["start_tuple"]["values"][
        "thread_pool_size"
    ] == 5

    second = create_model_version(
        db_session, values={"thread_pool_size": 7}, metrics={"regret": 0.1}
    )
    await api_client.post(f"/v1/models/{second.id}/promote", json={}, headers=admin_headers)
    body = await _recommend(api_client, token, facts)
    assert (body["model_version"], body["start_tuple"]["values"]["thread_pool_size"]) == (
        "const:2",
        7,
    )

    await api_client.post(f"/v1/models/{second.id}/demote", json={}, headers=admin_headers)
    assert (await _recommend(api_client, token, facts))["source"] == "heuristic"


async def test_a_corrupted_artifact_falls_back_with_a_logged_error(
    api_client: AsyncClient,
    db_session: Session,
    agent_token: tuple[str, dict[str, Any], int],
    caplog: pytest.LogCaptureFixture,
) -> None:
    token, facts, _ = agent_token
    version = create_model_version(db_session, values={"thread_pool_size": 5}, promote=True)
    db_session.execute(
        update(ModelVersion)
        .where(ModelVersion.id == version.id)
        .values(artifact=b'{"format":"pooltune.predictor","tampered":true}')
    )
    with caplog.at_level(logging.ERROR, logger="service.recommendations.predictor_cache"):
        body = await _recommend(api_client, token, facts)
        again = await _recommend(api_client, token, facts)
    assert body["source"] == again["source"] == "heuristic"
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1  # logged once per broken version, not on every request
    assert "sha256 mismatch" in errors[0].__dict__["error"]
    logged = db_session.scalars(select(RecommendationLog)).all()
    assert all(
        entry.fallback_reason and "sha256 mismatch" in entry.fallback_reason for entry in logged
    )
    metrics = (await api_client.get("/metrics")).text
    assert 'pooltune_model_errors_total{engine="mariadb",stage="load"} 2.0' in metrics
    assert 'pooltune_recommendations_total{engine="mariadb",source="heuristic"} 2.0' in metrics


@pytest.mark.parametrize("predictor", [ExplodingPredictor(), NonsensePredictor()])
async def test_a_failing_model_falls_back_to_the_heuristic(
    api_client: AsyncClient,
    db_session: Session,
    agent_token: tuple[str, dict[str, Any], int],
    predictor: Any,
) -> None:
    token, facts, _ = agent_token
    version = registry_service.register_version(
        db_session,
        engine=Engine.MARIADB,
        name="broken",
        artifact=dump_predictor(predictor),
        metrics={},
        training_summary={},
    )
    registry_service.promote_version(db_session, version.id, reason="test", forced=True)
    body = await _recommend(api_client, token, facts)
    assert body["source"] == "heuristic"
    entry = db_session.scalars(select(RecommendationLog)).one()
    assert entry.fallback_reason is not None and entry.fallback_reason.startswith("predict:")


async def test_the_promoted_model_is_loaded_once_per_version(
    api_client: AsyncClient,
    db_session: Session,
    agent_token: tuple[str, dict[str, Any], int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    token, facts, _ = agent_token
    loads: list[bytes] = []
    real_load = predictor_cache.load_predictor

    def counting_load(artifact: bytes, *, allow_pickle: bool) -> Any:
        loads.append(artifact)
        return real_load(artifact, allow_pickle=allow_pickle)

    monkeypatch.setattr(predictor_cache, "load_predictor", counting_load)
    create_model_version(db_session, promote=True)
    for _ in range(5):
        assert (await _recommend(api_client, token, facts))["source"] == "model"
    assert len(loads) == 1
    metrics = (await api_client.get("/metrics")).text
    assert 'pooltune_model_version_in_use{engine="mariadb"} 1.0' in metrics


async def test_models_are_per_engine(
    api_client: AsyncClient, admin_headers: dict[str, str], db_session: Session
) -> None:
    create_model_version(db_session, engine=Engine.PERCONA, promote=True)
    token = admin_headers["Authorization"].split()[1]
    mariadb = await _recommend(api_client, token, host_facts(engine="mariadb"))
    percona = await _recommend(api_client, token, host_facts(engine="percona"))
    assert (mariadb["source"], percona["source"]) == ("heuristic", "model")


async def test_bad_recommendation_requests_are_422(
    api_client: AsyncClient, agent_token: tuple[str, dict[str, Any], int]
) -> None:
    token, facts, _ = agent_token
    payload = recommendation_request(facts, connections=10, active_connections=50.0)
    response = await api_client.post("/v1/recommendations", json=payload, headers=auth(token))
    assert response.status_code == 422
    assert "cannot exceed" in response.json()["detail"][0]["msg"]


@pytest.fixture(scope="module")
def trained_artifact() -> bytes:
    """A tuple model the trainer fitted on synthetic workloads of 2 to 32 cores."""
    from tests.trainer.synthetic import synthetic_examples
    from trainer.artifact import artifact_bytes
    from trainer.search import SearchConfig, search_lightgbm

    examples = synthetic_examples(400, seed=3)
    return artifact_bytes(
        search_lightgbm(Engine.MARIADB, examples, SearchConfig(trials=2, seed=0)).model
    )


async def test_a_trained_model_states_its_predicted_gain_and_novelty_and_logs_them(
    api_client: AsyncClient,
    db_session: Session,
    agent_token: tuple[str, dict[str, Any], int],
    trained_artifact: bytes,
) -> None:
    token, facts, _ = agent_token
    version = registry_service.register_version(
        db_session,
        engine=Engine.MARIADB,
        name="lightgbm",
        artifact=trained_artifact,
        metrics={"regret": 0.01},
        training_summary={},
    )
    registry_service.promote_version(db_session, version.id, reason="test", forced=True)
    # Its training hosts all ran at 80% CPU: so does this one (12 000 → 16 000 queries/s).
    payload = recommendation_request(facts, qps=16000.0)
    payload["current_tuple"] = {"engine": "mariadb", "values": {"thread_pool_size": 8}}
    response = await api_client.post("/v1/recommendations", json=payload, headers=auth(token))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["source"] == "model"
    gain = body["predicted_gain"]
    assert set(gain) == {"estimate", "low", "high"}
    assert 0 < gain["low"] <= gain["estimate"] <= gain["high"]
    assert body["novelty"] >= 0
    assert "out_of_distribution" not in body  # in distribution: left out at its default

    # Exactly what the model itself answers for the host's current tuple.
    model = TupleModel.from_bytes(trained_artifact)
    answer = model.recommend(
        HostFacts.model_validate(facts),
        WorkloadProfile.model_validate(payload["profile"]),
        {"thread_pool_size": 8},
    )
    assert answer.predicted_gain is not None
    assert body["start_tuple"]["values"] == answer.values
    assert gain == pytest.approx(
        {
            "estimate": answer.predicted_gain.estimate,
            "low": answer.predicted_gain.low,
            "high": answer.predicted_gain.high,
        }
    )
    logged = db_session.scalars(select(RecommendationLog)).one()
    assert (logged.predicted_gain, logged.predicted_gain_low, logged.predicted_gain_high) == (
        pytest.approx(gain["estimate"]),
        pytest.approx(gain["low"]),
        pytest.approx(gain["high"]),
    )

    # Already running the recommended tuple: no gain, exactly.
    payload["current_tuple"] = {"engine": "mariadb", "values": body["start_tuple"]["values"]}
    again = await api_client.post("/v1/recommendations", json=payload, headers=auth(token))
    assert again.json()["predicted_gain"] == {"estimate": 1.0, "low": 1.0, "high": 1.0}


async def test_a_profile_outside_the_training_data_is_flagged_with_a_wider_range(
    api_client: AsyncClient,
    admin_headers: dict[str, str],
    db_session: Session,
    trained_artifact: bytes,
) -> None:
    """The model was trained on hosts of 2 to 32 cores: the same workload on 48 cores gets a
    range at least twice as wide in log size, and the flag."""
    version = registry_service.register_version(
        db_session,
        engine=Engine.MARIADB,
        name="lightgbm",
        artifact=trained_artifact,
        metrics={"regret": 0.01},
        training_summary={},
    )
    registry_service.promote_version(db_session, version.id, reason="test", forced=True)
    token = admin_headers["Authorization"].split()[1]
    # At 80% CPU as its training hosts: 0.8 × 32 cores / 0.4 ms = 64 000 queries/s.
    load = {"connections": 400, "active_connections": 60.0, "qps": 64000.0, "tps": 6400.0}
    inside = await _recommend(api_client, token, host_facts(cpu_count=32), **load)
    load |= {"qps": 96000.0, "tps": 9600.0}  # the same on 48 cores
    outside = await _recommend(api_client, token, host_facts(cpu_count=48), **load)
    assert "out_of_distribution" not in inside
    assert outside["out_of_distribution"] is True
    assert outside["novelty"] > inside["novelty"]

    def log_width(body: dict[str, Any]) -> float:
        size = body["ranges"]["thread_pool_size"]
        return float(np.log2(size["high"] / size["low"]))

    assert log_width(outside) >= 2 * log_width(inside) or (
        outside["ranges"]["thread_pool_size"] == {"low": 1, "high": 128}
    )
    logged = db_session.scalars(select(RecommendationLog).order_by(RecommendationLog.id)).all()
    assert [entry.source for entry in logged] == ["model", "model"]
